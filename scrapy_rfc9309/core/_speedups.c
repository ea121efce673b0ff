/* Optional C accelerator for the matcher's hot path (see matcher.py).
 *
 * A FastMatcher compiles one merged group's rules from the rules as parsed, in a
 * single pass: the literal rules (canonical text -> deciding rule) as a sorted
 * array searched by bisection, or for a large group as a hash table probed once
 * per distinct key length (building it costs no sort); the wildcard rules sorted
 * by priority. Patterns with "%" escapes or non-ASCII text are brought to their
 * canonical form by a Python callback. It keeps its own copy of the rules' text
 * and no Python object of them, and names each rule by its line, so that it gives
 * every rule back as written (written, best_rule, fill: a parsed file keeps no
 * other copy of them). Calling it with an absolute URL whose path
 * starts with "/" decides it entirely in C (canonical form included), with the
 * same semantics as the Python tiers; the canonical path of any other URL comes
 * from a Python callback and is decided here too. Every search is linear
 * (memmem, or a two-way search where the C library has none), so no input can
 * make a decision blow up.
 *
 * It builds with GCC, Clang and MSVC, and with any other C99 compiler through
 * plain-C fallbacks for their extensions. Defining SPEEDUPS_STANDARD_C makes GCC
 * or Clang take those fallbacks too (a test build: .ci/c-fallback-check).
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#ifdef _WIN32
#include <io.h>
#define RFC_WRITE(fd, data, n) _write((fd), (data), (unsigned int)(n))
#else
#include <unistd.h>
#define RFC_WRITE(fd, data, n) write((fd), (data), (size_t)(n))
#endif

/* Which compiler's extensions are used: GCC's (GCC and Clang, clang-cl included),
 * MSVC's, or none. */
#if defined(SPEEDUPS_STANDARD_C)
#define RFC_GNU 0
#define RFC_MSVC 0
#elif defined(__GNUC__) || defined(__clang__)
#define RFC_GNU 1
#define RFC_MSVC 0
#elif defined(_MSC_VER)
#define RFC_GNU 0
#define RFC_MSVC 1
#include <stdlib.h> /* _byteswap_uint64 */
#else
#define RFC_GNU 0
#define RFC_MSVC 0
#endif

/* The decision path is inlined whole into the vectorcall; other callers share one
 * out-of-line copy. A compiler without the two hints decides by itself. */
#if RFC_GNU
#define HOT_INLINE static inline __attribute__((always_inline))
#define COLD static __attribute__((noinline))
#elif RFC_MSVC
#define HOT_INLINE static __forceinline
#define COLD static __declspec(noinline)
#else
#define HOT_INLINE static inline
#define COLD static
#endif

/* The C library's memmem (glibc, musl, the BSDs and macOS have it), or the two-way
 * search below (Windows, and the standard-C test build). */
#if defined(_WIN32) || defined(SPEEDUPS_STANDARD_C)
#define RFC_OWN_MEMMEM 1
#else
#define RFC_OWN_MEMMEM 0
#endif

typedef struct {
    const char *s;
    Py_ssize_t n;
} Str;

/* While a matcher is built: a literal rule by canonical text, with the rule that
 * decides for that text. */
#define KEY_MAX_LENGTH (((Py_ssize_t)1 << 29) - 1)
typedef struct {
    const char *s;
    int32_t rule;              /* its index: among equal texts the first rule wins */
    uint32_t code;             /* line << 1 | allow */
    unsigned int n : 29;       /* at most KEY_MAX_LENGTH */
    unsigned int allow : 1;
    unsigned int special : 1;  /* written with "$", "%" or non-ASCII (loses ties to a plain one) */
    unsigned int written : 1;  /* written otherwise than its text: an Extra has it */
} Key;

/* While a matcher is built: a wildcard rule. */
typedef struct {
    Py_ssize_t priority;
    Py_ssize_t npieces;
    Str *pieces;
    uint32_t code; /* line << 1 | allow */
    unsigned char allow;
    unsigned char anchored;
} Wild;

/* A rule as written that the tables do not give back by themselves: a literal
 * rule whose text another rule decides for, one written with "%" escapes or
 * non-ASCII text (the tables hold its canonical form), or one without a key. Its
 * text is UTF-8, an undecodable octet of the file as itself ("surrogateescape",
 * as parser.py decodes a file). */
typedef struct {
    Str text;
    uint32_t code; /* line << 1 | allow */
} Extra;

/* A built matcher's wildcard rule: its pieces are the texts first .. first +
 * npieces - 1 after the keys'; flags is line << 2 | allow << 1 | anchored. In
 * 2-octet fields where the matcher's tables are narrow (see FastMatcher). */
typedef struct {
    uint32_t priority, flags, first, npieces;
} Glob32;
typedef struct {
    uint16_t priority, flags, first, npieces;
} Glob16;

/* What fast_new builds before the matcher is packed. */
typedef struct {
    Py_ssize_t nkeys;
    Key *keys;              /* sorted by text, or the hash table's entries */
    int32_t *slots;         /* the hash table (indices into keys, -1 when free); NULL: keys are sorted */
    int shift;              /* slot of a hash: (hash * GOLDEN) >> shift */
    unsigned char *has_len; /* hash table only: [maxlen + 1], whether some key has that length */
    Py_ssize_t maxlen;
    Py_ssize_t nwild;
    Wild *wild;
    Str *pieces; /* every wildcard's pieces, in one block */
    Py_ssize_t npieces;
    Py_ssize_t nextra;
    Extra *extra; /* by line */
    PyObject *owned; /* a list of the bytes objects that extras' texts point into */
} Build;

/* A matcher is one allocation, the object itself (a broad crawl keeps many): this
 * header, then the tables a decision reads, the text of every key, piece and extra
 * rule, copied (it keeps no Python object of the rules), and the other tables:
 *
 *   offs      W[nkeys + npieces + nextra + 1]  the texts' offsets
 *   key_rule  W[nkeys]          the deciding rule of each key, line << 1 | allow
 *   wild      GlobW[nwild]      the wildcard rules, by priority
 *   text                        (at text_at), then up to 3 octets to align the rest
 *   extra     uint32[nextra]    the extra rules' codes (line << 1 | allow), by line
 *   slots     W[nslots]         the hash table of a large group (indices of keys, all ones: free)
 *   maxlen    uint32            hash table only: the longest key
 *   has_len   uint8[maxlen + 1] hash table only: whether some key has that length
 *
 * W is uint16_t (narrow tables: the texts under 64 KiB, lines under 16384, as in
 * nearly every file) or uint32_t (wide). Key k's text is text[offs[k]:offs[k + 1]],
 * piece p's text[offs[nkeys + p]:...], extra rule e's text[offs[nkeys + npieces +
 * e]:...]. A rule is named by its line: every rule of the group, as written, can
 * be given back (FastMatcher.written). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    uint32_t nkeys, nwild, npieces, nextra;
    uint32_t text_at;    /* where the text starts, after the header */
    unsigned char shift; /* hash table only (0: the keys are sorted): the slot of a hash, (hash * GOLDEN) >> shift */
    unsigned char wide;  /* 4-octet tables (else 2-octet) */
} FastMatcher;

/* Where a matcher's tables are (computed on each call: the header keeps no
 * pointers); the last four only where view_rest() filled them in. */
typedef struct {
    const void *offs, *key_rule, *wild;
    const char *text;
    const uint32_t *extra;
    const void *slots; /* W[nslots] */
    const unsigned char *has_len;
    uint32_t maxlen;
} View;

#define TABLE(p, i, wide) ((wide) ? ((const uint32_t *)(p))[i] : (uint32_t)((const uint16_t *)(p))[i])
#define GLOB(v, k, field, wide) \
    ((wide) ? ((const Glob32 *)(v)->wild)[k].field : (uint32_t)((const Glob16 *)(v)->wild)[k].field)
#define OFF(v, i, wide) TABLE((v)->offs, i, wide)
#define KEY_TEXT(v, k, wide) ((v)->text + OFF(v, k, wide))
#define KEY_LEN(v, k, wide) ((Py_ssize_t)(OFF(v, (k) + 1, wide) - OFF(v, k, wide)))

static inline size_t
slot_count(const FastMatcher *self)
{
    return self->shift ? (size_t)1 << (64 - self->shift) : 0;
}

/* The tables a decision reads. */
HOT_INLINE View
view_of(const FastMatcher *self, int wide)
{
    View v;
    const char *at = (const char *)self + sizeof(FastMatcher);
    v.offs = at;
    v.key_rule = at + (wide ? 4 : 2) * ((size_t)self->nkeys + self->npieces + self->nextra + 1);
    v.wild = (const char *)v.key_rule + (wide ? 4 : 2) * (size_t)self->nkeys;
    v.text = at + self->text_at;
    v.extra = NULL;
    v.slots = NULL;
    v.has_len = NULL;
    v.maxlen = 0;
    return v;
}

/* The octets of the header, the tables and the text (the rest starts after them, aligned). */
static inline size_t
text_end(const FastMatcher *self, const View *v, int wide)
{
    size_t noffs = (size_t)self->nkeys + self->npieces + self->nextra + 1;
    return sizeof(FastMatcher) + self->text_at + OFF(v, noffs - 1, wide);
}

/* The other tables too. */
static void
view_rest(const FastMatcher *self, View *v, int wide)
{
    const char *at = (const char *)self + ((text_end(self, v, wide) + 3) & ~(size_t)3);
    v->extra = (const uint32_t *)at;
    v->slots = v->extra + self->nextra;
    if (self->shift) {
        const char *after = (const char *)v->slots + (wide ? 4 : 2) * slot_count(self);
        memcpy(&v->maxlen, after, sizeof(uint32_t));
        v->has_len = (const unsigned char *)after + sizeof(uint32_t);
    }
}

/* The matcher's size: the header, the tables and the text. */
static size_t
matcher_size(const FastMatcher *self)
{
    View v = view_of(self, self->wide);
    view_rest(self, &v, self->wide);
    if (self->shift)
        return (size_t)(v.has_len - (const unsigned char *)self) + v.maxlen + 1;
    return (size_t)((const char *)v.slots - (const char *)self);
}

/* ---- hashing: a polynomial modulo 2^61 - 1 over the text's 8-octet words (the
 * last one zero-padded), with a random base drawn at import, so that the hashes of
 * every prefix of a path come in one pass, and no file can be written to collide
 * (for two texts of the same length, a collision needs the base to be one of a
 * few roots among 2^61). */
#define M61 ((uint64_t)0x1FFFFFFFFFFFFFFFULL)
#define GOLDEN ((uint64_t)0x9E3779B97F4A7C15ULL)
static uint64_t hash_base = 0x1F3D5B79A2C4E6ULL; /* replaced at import */

#if RFC_GNU && defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 rfc_u128;
#endif

static inline uint64_t
mulmod61(uint64_t a, uint64_t b)
{
#if RFC_GNU && defined(__SIZEOF_INT128__)
    rfc_u128 p = (rfc_u128)a * b;
    uint64_t r = ((uint64_t)p & M61) + (uint64_t)(p >> 61);
#else /* a * b from 32-bit halves, folded modulo 2^61 - 1 (2^64 = 2^3 there) */
    uint64_t ah = a >> 32, al = a & 0xFFFFFFFFU, bh = b >> 32, bl = b & 0xFFFFFFFFU;
    uint64_t mid = ah * bl + al * bh, lo = al * bl;
    uint64_t r = ((ah * bh) << 3) + (mid >> 29) + ((mid & ((1ULL << 29) - 1)) << 32) + (lo >> 61) + (lo & M61);
#endif
    r = (r & M61) + (r >> 61);
    return r >= M61 ? r - M61 : r;
}

/* The hash of a text extended by one word. */
static inline uint64_t
hash_word(uint64_t h, uint64_t word)
{
    h = mulmod61(h, hash_base) + (word & M61) + (word >> 61);
    h = (h & M61) + (h >> 61);
    return h >= M61 ? h - M61 : h;
}

/* The first n (< 8) octets of s as a zero-padded word. */
static inline uint64_t
load_part(const char *s, Py_ssize_t n)
{
    uint64_t word = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        word |= (uint64_t)(unsigned char)s[i] << (8 * i);
    return word;
}

#if PY_BIG_ENDIAN
static inline uint64_t
bswap64(uint64_t x)
{
#if RFC_GNU
    return __builtin_bswap64(x);
#elif RFC_MSVC
    return _byteswap_uint64(x);
#else
    x = x >> 32 | x << 32;
    x = (x & 0xFFFF0000FFFF0000ULL) >> 16 | (x & 0x0000FFFF0000FFFFULL) << 16;
    return (x & 0xFF00FF00FF00FF00ULL) >> 8 | (x & 0x00FF00FF00FF00FFULL) << 8;
#endif
}
#endif

/* The 8 octets at s as a word, in the order of load_part (the first octet lowest). */
static inline uint64_t
load_word(const char *s)
{
    uint64_t word;
    memcpy(&word, s, 8);
#if PY_BIG_ENDIAN
    word = bswap64(word);
#endif
    return word;
}

static uint64_t
hash_text(const char *s, Py_ssize_t n)
{
    uint64_t h = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8)
        h = hash_word(h, load_word(s + i));
    if (i < n)
        h = hash_word(h, load_part(s + i, n - i));
    return h;
}

static int
ascii_str(PyObject *obj, Str *out)
{
    if (!PyUnicode_Check(obj) || !PyUnicode_IS_ASCII(obj)) {
        PyErr_SetString(PyExc_ValueError, "FastMatcher takes ASCII strings only");
        return -1;
    }
    out->s = (const char *)PyUnicode_1BYTE_DATA(obj);
    out->n = PyUnicode_GET_LENGTH(obj);
    return 0;
}

/* Python's ordering of ASCII strings. */
static int
compare(const char *a, Py_ssize_t an, const char *b, Py_ssize_t bn)
{
    Py_ssize_t n = an < bn ? an : bn;
    int c = memcmp(a, b, (size_t)n);
    if (c)
        return c;
    return (an > bn) - (an < bn);
}

/* Among rules with the same canonical text: an allow rule, then one written
 * plainly, then the first one (as the pure-Python tier picks). */
static int
better(const Key *a, const Key *b)
{
    if (a->allow != b->allow)
        return a->allow > b->allow;
    if (a->special != b->special)
        return a->special < b->special;
    return a->rule < b->rule;
}

static int
key_order(const void *x, const void *y)
{
    const Key *a = x, *b = y;
    int c = compare(a->s, a->n, b->s, b->n);
    if (c)
        return c;
    return better(a, b) ? -1 : better(b, a);
}

/* Index of the last key <= text, or -1. */
HOT_INLINE Py_ssize_t
bisect_last(const FastMatcher *self, const View *v, int wide, const char *text, Py_ssize_t n)
{
    Py_ssize_t lo = 0, hi = self->nkeys;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (compare(text, n, KEY_TEXT(v, mid, wide), KEY_LEN(v, mid, wide)) < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo - 1;
}

/* The index of the longest key that prefixes the path, or -1. */
HOT_INLINE Py_ssize_t
longest_sorted(const FastMatcher *self, const View *v, int wide, const char *path, Py_ssize_t n)
{
    Py_ssize_t index = bisect_last(self, v, wide, path, n);
    while (index >= 0) {
        const char *s = KEY_TEXT(v, index, wide);
        Py_ssize_t kn = KEY_LEN(v, index, wide);
        if (kn <= n && memcmp(s, path, (size_t)kn) == 0)
            return index;
        Py_ssize_t common = 0, limit = kn < n ? kn : n;
        while (common < limit && s[common] == path[common])
            common++;
        index = bisect_last(self, v, wide, path, common);
    }
    return -1;
}

static inline size_t
slot_of(int shift, uint64_t h)
{
    return (size_t)((h * GOLDEN) >> shift);
}

static Py_ssize_t
probe(const FastMatcher *self, const View *v, int wide, uint64_t h, const char *text, Py_ssize_t n)
{
    size_t mask = ((size_t)1 << (64 - self->shift)) - 1;
    for (size_t slot = slot_of(self->shift, h);; slot = (slot + 1) & mask) {
        uint32_t index = TABLE(v->slots, slot, wide);
        if (index == (wide ? UINT32_MAX : 0xFFFF))
            return -1;
        if (KEY_LEN(v, index, wide) == n && memcmp(KEY_TEXT(v, index, wide), text, (size_t)n) == 0)
            return index;
    }
}

/* The longest key that prefixes the path (-1: none): one pass over the path, one
 * probe per length that some key has (large groups only: kept out of the hot path). */
COLD Py_ssize_t
longest_hashed(const FastMatcher *self, const View *v, int wide, const char *path, Py_ssize_t n)
{
    Py_ssize_t found = -1, key;
    View all = *v;
    view_rest(self, &all, wide);
    v = &all;
    Py_ssize_t limit = n < (Py_ssize_t)v->maxlen ? n : (Py_ssize_t)v->maxlen;
    const unsigned char *has_len = v->has_len;
    uint64_t h = 0; /* the hash of path[:base] */
    for (Py_ssize_t base = 0;; base += 8) {
        if (has_len[base] && (key = probe(self, v, wide, h, path, base)) >= 0)
            found = key;
        Py_ssize_t rest = limit - base;
        if (rest <= 0)
            return found;
        uint64_t word = rest >= 8 ? load_word(path + base) : load_part(path + base, rest);
        for (Py_ssize_t part = 1; part < 8 && part <= rest; part++)
            if (has_len[base + part]
                && (key = probe(self, v, wide, hash_word(h, word & ((1ULL << (8 * part)) - 1)), path, base + part)) >= 0)
                found = key;
        if (rest < 8)
            return found;
        h = hash_word(h, word);
    }
}

#if RFC_OWN_MEMMEM
/* Crochemore and Perrin's two-way string matching: linear time, constant space.
 *
 * The start of the maximal suffix of x[0:m] for the octet order (reverse = 0) or
 * its reverse (-1 when it is x itself), and that suffix's period in *period. */
static Py_ssize_t
maximal_suffix(const unsigned char *x, Py_ssize_t m, int reverse, Py_ssize_t *period)
{
    Py_ssize_t start = -1, j = 0, k = 1, p = 1;
    while (j + k < m) {
        unsigned char a = x[j + k], b = x[start + k];
        if (reverse ? a > b : a < b) {
            j += k;
            k = 1;
            p = j - start;
        }
        else if (a == b) {
            if (k != p)
                k++;
            else {
                j += p;
                k = 1;
            }
        }
        else {
            start = j;
            j = start + 1;
            k = p = 1;
        }
    }
    *period = p;
    return start;
}

/* The first occurrence of x[0:m] (m >= 1) in y[0:n], or -1. */
static Py_ssize_t
two_way(const unsigned char *x, Py_ssize_t m, const unsigned char *y, Py_ssize_t n)
{
    Py_ssize_t p, q, per, i, j;
    Py_ssize_t u = maximal_suffix(x, m, 0, &p), v = maximal_suffix(x, m, 1, &q);
    Py_ssize_t ell = u > v ? u : v; /* the critical factorization: x[0:ell+1] x[ell+1:m] */
    per = u > v ? p : q;
    if (memcmp(x, x + per, (size_t)(ell + 1)) == 0) {
        /* x is periodic with period per: remember the prefix matched already */
        Py_ssize_t memory = -1;
        for (j = 0; j <= n - m;) {
            i = (ell > memory ? ell : memory) + 1;
            while (i < m && x[i] == y[i + j])
                i++;
            if (i < m) {
                j += i - ell;
                memory = -1;
                continue;
            }
            for (i = ell; i > memory && x[i] == y[i + j]; i--)
                ;
            if (i <= memory)
                return j;
            j += per;
            memory = m - per - 1;
        }
        return -1;
    }
    per = (ell + 1 > m - ell - 1 ? ell + 1 : m - ell - 1) + 1;
    for (j = 0; j <= n - m;) {
        i = ell + 1;
        while (i < m && x[i] == y[i + j])
            i++;
        if (i < m) {
            j += i - ell;
            continue;
        }
        for (i = ell; i >= 0 && x[i] == y[i + j]; i--)
            ;
        if (i < 0)
            return j;
        j += per;
    }
    return -1;
}
#endif

static Py_ssize_t
find(const char *hay, Py_ssize_t hn, Py_ssize_t from, Str needle)
{
    if (needle.n == 0)
        return from <= hn ? from : -1;
    if (from > hn)
        return -1;
#if RFC_OWN_MEMMEM
    Py_ssize_t at = two_way((const unsigned char *)needle.s, needle.n, (const unsigned char *)hay + from, hn - from);
    return at < 0 ? -1 : from + at;
#else
    const char *hit = memmem(hay + from, (size_t)(hn - from), needle.s, (size_t)needle.n);
    return hit ? (Py_ssize_t)(hit - hay) : -1;
#endif
}

HOT_INLINE int
glob(const FastMatcher *self, const View *v, int wide, const char *path, Py_ssize_t n, uint32_t k)
{
    size_t first_piece = (size_t)self->nkeys + GLOB(v, k, first, wide);
    const char *text = v->text;
    uint32_t start = OFF(v, first_piece, wide), end = OFF(v, first_piece + 1, wide);
    Str first = {text + start, (Py_ssize_t)(end - start)};
    if (first.n > n || memcmp(first.s, path, (size_t)first.n) != 0)
        return 0;
    Py_ssize_t last = (Py_ssize_t)GLOB(v, k, npieces, wide) - 1;
    int anchored = GLOB(v, k, flags, wide) & 1;
    if (last == 0)
        return !anchored || n == first.n;
    Py_ssize_t pos = first.n;
    for (Py_ssize_t i = 1; i <= last; i++) {
        start = end;
        end = OFF(v, first_piece + (size_t)i + 1, wide);
        Str piece = {text + start, (Py_ssize_t)(end - start)};
        if (i == last) {
            if (anchored)
                return n - piece.n >= pos && memcmp(path + n - piece.n, piece.s, (size_t)piece.n) == 0;
            return find(path, n, pos, piece) >= 0;
        }
        pos = find(path, n, pos, piece);
        if (pos < 0)
            return 0;
        pos += piece.n;
    }
    return 0; /* not reached */
}

/* What decides a canonical path: a key k (k), a wildcard rule w (nkeys + w), or
 * no rule (-1); and whether it allows. */
HOT_INLINE Py_ssize_t
decide(const FastMatcher *self, const View *v, int wide, const char *path, Py_ssize_t n, int *allow_out)
{
    Py_ssize_t best = -1, best_priority = -1;
    int allow = 1;
    Py_ssize_t key = self->shift ? longest_hashed(self, v, wide, path, n) : longest_sorted(self, v, wide, path, n);
    if (key >= 0) {
        best = key;
        best_priority = KEY_LEN(v, key, wide);
        allow = TABLE(v->key_rule, key, wide) & 1;
    }
    for (uint32_t k = 0; k < self->nwild; k++) {
        Py_ssize_t priority = (Py_ssize_t)GLOB(v, k, priority, wide);
        int w_allow = (GLOB(v, k, flags, wide) >> 1) & 1;
        if (priority < best_priority || (priority == best_priority && (allow || !w_allow)))
            break;
        if (glob(self, v, wide, path, n, k)) {
            *allow_out = w_allow;
            return (Py_ssize_t)self->nkeys + k;
        }
    }
    *allow_out = allow;
    return best;
}

/* decide() for either width of tables, each inlined with its width known. */
HOT_INLINE Py_ssize_t
decide_any(const FastMatcher *self, const char *path, Py_ssize_t n, int *allow)
{
    if (self->wide) {
        View v = view_of(self, 1);
        return decide(self, &v, 1, path, n, allow);
    }
    View v = view_of(self, 0);
    return decide(self, &v, 0, path, n, allow);
}

COLD Py_ssize_t
decide_call(const FastMatcher *self, const char *path, Py_ssize_t n, int *allow)
{
    return decide_any(self, path, n, allow);
}

/* The canonical form of urlnorm.py: "%xx" of an ASCII octet that has no
 * delimiting role is decoded, other escapes and non-ASCII octets are "%XX", a lone
 * "%" is "%25". In the query (after the first "?") ":" "/" "?" "@" are decoded too. */
static int
hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 32;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int
keep_encoded(int octet, int in_query)
{
    if (octet >= 0x80)
        return 1;
    if (in_query && (octet == ':' || octet == '/' || octet == '?' || octet == '@'))
        return 0;
    return strchr("%/?#[]:@!&'()+,;=", octet) != NULL && octet != 0;
}

static Py_ssize_t
canonical_path_c(const char *src, Py_ssize_t n, char *out)
{
    static const char HEX[] = "0123456789ABCDEF";
    Py_ssize_t o = 0;
    int in_query = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c == '%') {
            int hi = i + 2 < n ? hexval(src[i + 1]) : -1, lo = i + 2 < n ? hexval(src[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                memcpy(out + o, "%25", 3);
                o += 3;
                continue;
            }
            int octet = hi * 16 + lo;
            i += 2;
            if (keep_encoded(octet, in_query)) {
                out[o++] = '%';
                out[o++] = HEX[octet >> 4];
                out[o++] = HEX[octet & 15];
            }
            else
                out[o++] = (char)octet;
        }
        else if (c >= 0x80) {
            out[o++] = '%';
            out[o++] = HEX[c >> 4];
            out[o++] = HEX[c & 15];
        }
        else {
            if (c == '?')
                in_query = 1;
            out[o++] = (char)c;
        }
    }
    return o;
}

/* A canonical path given by Python: ASCII str. */
static int
canonical_arg(PyObject *path, const char **s, Py_ssize_t *n)
{
    if (!PyUnicode_Check(path) || !PyUnicode_IS_ASCII(path)) {
        PyErr_SetString(PyExc_ValueError, "a canonical path is an ASCII str");
        return -1;
    }
    *s = (const char *)PyUnicode_1BYTE_DATA(path);
    *n = PyUnicode_GET_LENGTH(path);
    return 0;
}

/* The canonical path of a URL not decoded in C (see configure()). */
static PyObject *path_of_fn = NULL;

/* "/robots.txt", which every matcher allows whatever its rules. */
static int
is_robots_txt(const char *path, Py_ssize_t n)
{
    return n == 11 && memcmp(path, "/robots.txt", 11) == 0;
}

/* The canonical path of a URL not decoded in C, from path_of_fn: a new reference
 * (or NULL with an exception), its text in *s and *n. */
static PyObject *
path_in_python(PyObject *url, const char **s, Py_ssize_t *n)
{
    if (path_of_fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
        return NULL;
    }
    PyObject *path = PyObject_CallOneArg(path_of_fn, url);
    if (path != NULL && canonical_arg(path, s, n) < 0)
        Py_CLEAR(path);
    return path;
}

static PyObject *
decide_in_python(FastMatcher *self, PyObject *url)
{
    const char *s;
    Py_ssize_t n;
    int allow = 1;
    PyObject *path = path_in_python(url, &s, &n);
    if (path == NULL)
        return NULL;
    if (!is_robots_txt(s, n))
        decide_call(self, s, n, &allow);
    Py_DECREF(path);
    return PyBool_FromLong(allow);
}

/* The canonical path of a str URL, decoded in C: 0 with *path and *plen set (in
 * stack, of 2048 bytes, or in *heap, to PyMem_Free), 1 for a URL the Python tier
 * decodes (see configure()), -1 with an exception. */
static int
url_path_c(PyObject *url, const char **path_out, Py_ssize_t *plen_out, char *stack, char **heap)
{
    const char *u;
    Py_ssize_t n;
    int ascii = PyUnicode_IS_ASCII(url);
    if (ascii) {
        u = (const char *)PyUnicode_1BYTE_DATA(url);
        n = PyUnicode_GET_LENGTH(url);
    }
    else {
        u = PyUnicode_AsUTF8AndSize(url, &n);
        if (u == NULL) { /* lone surrogates: the Python tier knows what to do */
            PyErr_Clear();
            return 1;
        }
    }
    /* scheme "://" authority, then the path must start with "/" */
    Py_ssize_t i = 0;
    if (n == 0 || !((u[0] | 32) >= 'a' && (u[0] | 32) <= 'z'))
        return 1;
    for (i = 1; i < n; i++) {
        char c = u[i];
        if (!(((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-'))
            break;
    }
    if (i + 3 > n || u[i] != ':' || u[i + 1] != '/' || u[i + 2] != '/')
        return 1;
    for (i += 3; i < n; i++) {
        char c = u[i];
        if (c == '/' || c == '?' || c == ';' || c == '#')
            break;
    }
    if (i >= n || u[i] != '/')
        return 1;
    const char *path = u + i;
    Py_ssize_t plen = n - i;
    const char *hash = memchr(path, '#', (size_t)plen);
    if (hash)
        plen = hash - path;
    if (!ascii || memchr(path, '%', (size_t)plen)) {
        char *buf = stack;
        if (plen * 3 > 2048) {
            *heap = buf = PyMem_Malloc((size_t)plen * 3);
            if (buf == NULL) {
                PyErr_NoMemory();
                return -1;
            }
        }
        plen = canonical_path_c(path, plen, buf);
        path = buf;
    }
    *path_out = path;
    *plen_out = plen;
    return 0;
}

static PyObject *
fast_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FastMatcher *self = (FastMatcher *)callable;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "FastMatcher takes one URL");
        return NULL;
    }
    PyObject *url = args[0];
    if (!PyUnicode_Check(url))
        return decide_in_python(self, url);
    char stack[2048], *heap = NULL;
    const char *path;
    Py_ssize_t plen;
    int found = url_path_c(url, &path, &plen, stack, &heap);
    if (found < 0)
        return NULL;
    if (found > 0)
        return decide_in_python(self, url);
    int allow = 1;
    if (!is_robots_txt(path, plen))
        decide_any(self, path, plen, &allow);
    PyMem_Free(heap);
    return PyBool_FromLong(allow);
}

/* ---- rules as written, given back --------------------------------------------- */

/* Where a rule's text as written is: key k's text, wildcard rule w's pieces joined
 * by "*" (and "$" when anchored), or extra rule e's text; and its code. */
enum { SRC_KEY, SRC_GLOB, SRC_EXTRA };
typedef struct {
    int kind;
    uint32_t index;
    uint32_t code; /* line << 1 | allow */
} Src;

/* The extra rule written on a line, or -1. */
static Py_ssize_t
extra_on(const FastMatcher *self, const View *v, uint32_t line)
{
    Py_ssize_t lo = 0, hi = self->nextra;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if ((v->extra[mid] >> 1) < line)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < (Py_ssize_t)self->nextra && (v->extra[lo] >> 1) == line ? lo : -1;
}

/* The rule of what decide() gives, key k (k) or wildcard rule w (nkeys + w), as
 * the tables hold it. */
static Src
table_src(const FastMatcher *self, const View *v, int wide, Py_ssize_t which)
{
    if (which < (Py_ssize_t)self->nkeys)
        return (Src){SRC_KEY, (uint32_t)which, TABLE(v->key_rule, which, wide)};
    uint32_t w = (uint32_t)(which - self->nkeys), flags = GLOB(v, w, flags, wide);
    return (Src){SRC_GLOB, w, (flags >> 2) << 1 | ((flags >> 1) & 1)};
}

/* The same rule as written: an extra rule on its line has its text as written. */
static Src
src_of(const FastMatcher *self, const View *v, int wide, Py_ssize_t which)
{
    Src src = table_src(self, v, wide, which);
    Py_ssize_t e = self->nextra ? extra_on(self, v, src.code >> 1) : -1;
    if (e >= 0)
        src.kind = SRC_EXTRA, src.index = (uint32_t)e;
    return src;
}

/* The length of a rule's text as written, and the text written at out (when not NULL). */
static size_t
src_text(const FastMatcher *self, const View *v, int wide, Src src, char *out)
{
    if (src.kind != SRC_GLOB) {
        size_t i = src.kind == SRC_KEY ? src.index : (size_t)self->nkeys + self->npieces + src.index;
        uint32_t start = OFF(v, i, wide), end = OFF(v, i + 1, wide);
        if (out)
            memcpy(out, v->text + start, end - start);
        return end - start;
    }
    size_t first = (size_t)self->nkeys + GLOB(v, src.index, first, wide);
    uint32_t count = GLOB(v, src.index, npieces, wide), anchored = GLOB(v, src.index, flags, wide) & 1;
    size_t size = OFF(v, first + count, wide) - OFF(v, first, wide) + count - 1 + anchored;
    if (out) {
        for (uint32_t i = 0; i < count; i++) {
            uint32_t a = OFF(v, first + i, wide), b = OFF(v, first + i + 1, wide);
            if (i)
                *out++ = '*';
            memcpy(out, v->text + a, b - a);
            out += b - a;
        }
        if (anchored)
            *out = '$';
    }
    return size;
}

/* matcher.Rule(allow, pattern, line) of a rule (see configure()). */
static PyTypeObject *rule_type = NULL;
static PyObject *
make_rule(const FastMatcher *self, const View *v, int wide, Src src)
{
    size_t n = src_text(self, v, wide, src, NULL);
    char stack[256], *buf = n <= sizeof(stack) ? stack : PyMem_Malloc(n);
    if (buf == NULL)
        return PyErr_NoMemory();
    src_text(self, v, wide, src, buf);
    /* the text as utf8_octets writes it: undecodable octets as themselves */
    PyObject *pattern = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)n, "surrogateescape");
    if (buf != stack)
        PyMem_Free(buf);
    PyObject *line = pattern == NULL ? NULL : PyLong_FromUnsignedLong(src.code >> 1);
    PyObject *rule = line == NULL ? NULL : rule_type ? rule_type->tp_alloc(rule_type, 3) : PyTuple_New(3);
    if (rule == NULL) {
        Py_XDECREF(pattern);
        Py_XDECREF(line);
        return NULL;
    }
    PyTuple_SET_ITEM(rule, 0, PyBool_FromLong(src.code & 1));
    PyTuple_SET_ITEM(rule, 1, pattern);
    PyTuple_SET_ITEM(rule, 2, line);
    return rule;
}

static PyObject *
fast_best_rule(FastMatcher *self, PyObject *path)
{
    const char *s;
    Py_ssize_t n;
    int allow;
    if (canonical_arg(path, &s, &n) < 0)
        return NULL;
    Py_ssize_t which = decide_call(self, s, n, &allow);
    if (which < 0)
        Py_RETURN_NONE;
    View v = view_of(self, self->wide);
    view_rest(self, &v, self->wide);
    return make_rule(self, &v, self->wide, src_of(self, &v, self->wide, which));
}

/* The rule that decides a URL (None: none, the URL is allowed): best_rule() of
 * its canonical path, as the call decodes it, in one call. */
static PyObject *
fast_url_rule(FastMatcher *self, PyObject *url)
{
    char stack[2048], *heap = NULL;
    const char *path;
    Py_ssize_t plen;
    PyObject *decoded = NULL;
    int found = PyUnicode_Check(url) ? url_path_c(url, &path, &plen, stack, &heap) : 1;
    if (found < 0)
        return NULL;
    if (found > 0 && (decoded = path_in_python(url, &path, &plen)) == NULL)
        return NULL;
    PyObject *out = NULL;
    int allow;
    Py_ssize_t which = is_robots_txt(path, plen) ? -1 : decide_call(self, path, plen, &allow);
    if (which < 0)
        out = Py_NewRef(Py_None);
    else {
        View v = view_of(self, self->wide);
        view_rest(self, &v, self->wide);
        out = make_rule(self, &v, self->wide, src_of(self, &v, self->wide, which));
    }
    Py_XDECREF(decoded);
    PyMem_Free(heap);
    return out;
}

typedef struct {
    uint32_t line;
    uint32_t table; /* 0: an extra rule (first among rules of one line), 1: a key or a wildcard rule */
    uint32_t which; /* the extra rule, or what decide() gives */
} Entry;

static int
entry_order(const void *x, const void *y)
{
    const Entry *a = x, *b = y;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return (a->table > b->table) - (a->table < b->table);
}

/* Every rule as written, by line, in *out (PyMem_Malloc'd; NULL and an exception
 * when out of memory); their number in *count. */
static Src *
rules_by_line(const FastMatcher *self, const View *v, int wide, size_t *count)
{
    size_t total = (size_t)self->nkeys + self->nwild + self->nextra, n = 0, kept = 0;
    Entry *entries = PyMem_Malloc((total ? total : 1) * sizeof(Entry));
    Src *out = PyMem_Malloc((total ? total : 1) * sizeof(Src));
    if (entries == NULL || out == NULL) {
        PyMem_Free(entries);
        PyMem_Free(out);
        PyErr_NoMemory();
        return NULL;
    }
    for (uint32_t k = 0; k < self->nkeys; k++)
        entries[n++] = (Entry){TABLE(v->key_rule, k, wide) >> 1, 1, k};
    for (uint32_t w = 0; w < self->nwild; w++)
        entries[n++] = (Entry){GLOB(v, w, flags, wide) >> 2, 1, self->nkeys + w};
    for (uint32_t e = 0; e < self->nextra; e++)
        entries[n++] = (Entry){v->extra[e] >> 1, 0, e};
    qsort(entries, n, sizeof(Entry), entry_order);
    for (size_t i = 0; i < n; i++) {
        const Entry *entry = &entries[i];
        if (!entry->table)
            out[kept++] = (Src){SRC_EXTRA, entry->which, v->extra[entry->which]};
        else if (!(i && !entries[i - 1].table && entries[i - 1].line == entry->line))
            out[kept++] = table_src(self, v, wide, entry->which); /* (else written as the extra rule before it) */
    }
    PyMem_Free(entries);
    *count = kept;
    return out;
}

/* Every rule of the group as written, in file order: [matcher.Rule]. */
static PyObject *
fast_written(FastMatcher *self, PyObject *Py_UNUSED(ignored))
{
    int wide = self->wide;
    View v = view_of(self, wide);
    view_rest(self, &v, wide);
    size_t n;
    Src *rules = rules_by_line(self, &v, wide, &n);
    if (rules == NULL)
        return NULL;
    PyObject *out = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; out != NULL && i < n; i++) {
        PyObject *rule = make_rule(self, &v, wide, rules[i]);
        if (rule == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, (Py_ssize_t)i, rule);
    }
    PyMem_Free(rules);
    return out;
}

/* fill(records: bytes, keys: (disallow_key, allow_key)) -> records with every rule
 * written on its line as key + text (parser.with_rules): the lines are empty there. */
static PyObject *
fast_fill(FastMatcher *self, PyObject *args)
{
    Py_buffer records;
    PyObject *keys;
    if (!PyArg_ParseTuple(args, "y*O!:fill", &records, &PyTuple_Type, &keys))
        return NULL;
    PyObject *out = NULL;
    Src *rules = NULL;
    if (PyTuple_GET_SIZE(keys) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(keys, 0))
        || !PyBytes_Check(PyTuple_GET_ITEM(keys, 1))) {
        PyErr_SetString(PyExc_TypeError, "keys: (disallow_key, allow_key), bytes");
        goto done;
    }
    int wide = self->wide;
    View v = view_of(self, wide);
    view_rest(self, &v, wide);
    size_t n, size = (size_t)records.len;
    rules = rules_by_line(self, &v, wide, &n);
    if (rules == NULL)
        goto done;
    for (size_t i = 0; i < n; i++)
        size += (size_t)PyBytes_GET_SIZE(PyTuple_GET_ITEM(keys, rules[i].code & 1)) + src_text(self, &v, wide, rules[i], NULL);
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (out == NULL)
        goto done;
    char *o = PyBytes_AS_STRING(out);
    const char *at = records.buf, *end = at + records.len;
    uint32_t line = 1;
    for (size_t i = 0; i < n; i++) {
        uint32_t want = rules[i].code >> 1;
        while (line < want) {
            const char *newline = memchr(at, '\n', (size_t)(end - at));
            if (newline == NULL)
                break;
            memcpy(o, at, (size_t)(newline + 1 - at));
            o += newline + 1 - at;
            at = newline + 1;
            line++;
        }
        if (line != want || (at < end && *at != '\n')) {
            PyErr_SetString(PyExc_ValueError, "a rule's line is not an empty line of the records");
            Py_CLEAR(out);
            goto done;
        }
        PyObject *key = PyTuple_GET_ITEM(keys, rules[i].code & 1);
        memcpy(o, PyBytes_AS_STRING(key), (size_t)PyBytes_GET_SIZE(key));
        o += PyBytes_GET_SIZE(key);
        o += src_text(self, &v, wide, rules[i], o);
    }
    memcpy(o, at, (size_t)(end - at));
done:
    PyMem_Free(rules);
    PyBuffer_Release(&records);
    return out;
}

static PyObject *
fast_sizeof(FastMatcher *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSize_t(matcher_size(self));
}

static void
fast_dealloc(FastMatcher *self)
{
    PyObject_Free(self);
}

/* ---- building ------------------------------------------------------------------ */

static void
build_free(Build *b)
{
    PyMem_Free(b->keys);
    PyMem_Free(b->slots);
    PyMem_Free(b->has_len);
    PyMem_Free(b->wild);
    PyMem_Free(b->pieces);
    PyMem_Free(b->extra);
    Py_XDECREF(b->owned);
}

static void
add_extra(Build *b, uint32_t code, Str text)
{
    b->extra[b->nextra].text = text;
    b->extra[b->nextra++].code = code;
}

/* A key another rule decides for: kept as an extra rule unless it is one already. */
static void
add_loser(Build *b, const Key *key)
{
    if (!key->written)
        add_extra(b, key->code, (Str){key->s, key->n});
}

/* The octets of a pattern as written: UTF-8, the undecodable octets of the file as
 * themselves (a pattern that does not come back from them is refused). */
static int
written_text(Build *b, PyObject *pattern, Str *out)
{
    if (PyUnicode_IS_ASCII(pattern)) {
        out->s = (const char *)PyUnicode_1BYTE_DATA(pattern);
        out->n = PyUnicode_GET_LENGTH(pattern);
        return 0;
    }
    PyObject *bytes = PyUnicode_AsEncodedString(pattern, "utf-8", "surrogateescape");
    if (bytes == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "a pattern that is not text decoded from octets");
        }
        return -1;
    }
    PyObject *back = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes), "surrogateescape");
    int same = back == NULL ? -1 : PyUnicode_Compare(back, pattern) == 0;
    Py_XDECREF(back);
    if (same <= 0) {
        Py_DECREF(bytes);
        if (same == 0)
            PyErr_SetString(PyExc_ValueError, "a pattern that is not text decoded from octets");
        return -1;
    }
    if ((b->owned == NULL && (b->owned = PyList_New(0)) == NULL) || PyList_Append(b->owned, bytes) < 0) {
        Py_DECREF(bytes);
        return -1;
    }
    Py_DECREF(bytes); /* b->owned keeps it */
    out->s = PyBytes_AS_STRING(bytes);
    out->n = PyBytes_GET_SIZE(bytes);
    return 0;
}

/* Dedupe the keys in a hash table: one entry per text, the better rule kept. */
static int
build_hash(Build *b, Py_ssize_t nkeys)
{
    int bits = 1;
    while (((Py_ssize_t)1 << bits) < 2 * nkeys)
        bits++;
    size_t size = (size_t)1 << bits, mask = size - 1;
    b->shift = 64 - bits;
    b->slots = PyMem_Malloc(size * sizeof(int32_t));
    Py_ssize_t maxlen = 0;
    for (Py_ssize_t k = 0; k < nkeys; k++)
        if (b->keys[k].n > maxlen)
            maxlen = b->keys[k].n;
    b->has_len = PyMem_Calloc((size_t)maxlen + 1, 1);
    if (!b->slots || !b->has_len) {
        PyErr_NoMemory();
        return -1;
    }
    b->maxlen = maxlen;
    memset(b->slots, 0xFF, size * sizeof(int32_t));
    Py_ssize_t count = 0;
    for (Py_ssize_t k = 0; k < nkeys; k++) {
        Key key = b->keys[k];
        uint64_t h = hash_text(key.s, key.n);
        for (size_t slot = slot_of(b->shift, h);; slot = (slot + 1) & mask) {
            int32_t index = b->slots[slot];
            if (index < 0) {
                b->slots[slot] = (int32_t)count;
                b->keys[count++] = key;
                b->has_len[key.n] = 1;
                break;
            }
            Key *same = &b->keys[index];
            if (same->n == key.n && memcmp(same->s, key.s, (size_t)key.n) == 0) {
                if (better(&key, same)) {
                    add_loser(b, same);
                    *same = key;
                }
                else
                    add_loser(b, &key);
                break;
            }
        }
    }
    b->nkeys = count;
    return 0;
}

/* A key's first 8 octets, big-endian, zero-padded: keys whose prefixes differ
 * are in the order of their prefixes (a shorter key's padding is below the
 * octet the longer one has there, and it is the smaller of the two). */
static uint64_t
key_prefix(const Key *key)
{
    uint64_t prefix = 0;
    for (Py_ssize_t i = 0; i < 8; i++)
        prefix = prefix << 8 | (i < (Py_ssize_t)key->n ? (unsigned char)key->s[i] : 0);
    return prefix;
}

/* Below this many keys, qsort alone. */
#define RADIX_FROM 64

/* The keys in key_order: a stable radix sort on their prefixes (a pass for each
 * of the 8 octets that differ among them), then each run of keys sharing a
 * prefix sorted with key_order. A file's literal rules mostly differ in their
 * first 8 octets: about n passes of n steps instead of n log n calls of
 * key_order, each comparing texts. */
static int
sort_keys(Key *keys, Py_ssize_t n)
{
    if (n < RADIX_FROM) {
        qsort(keys, (size_t)n, sizeof(Key), key_order);
        return 0;
    }
    typedef struct {
        uint64_t prefix;
        Py_ssize_t index;
    } Item;
    Item *items = PyMem_Malloc((size_t)n * 2 * sizeof(Item));
    if (items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Item *from = items, *to = items + n;
    for (Py_ssize_t i = 0; i < n; i++) {
        from[i].prefix = key_prefix(&keys[i]);
        from[i].index = i;
    }
    for (int shift = 0; shift < 64; shift += 8) {
        Py_ssize_t count[257] = {0};
        for (Py_ssize_t i = 0; i < n; i++)
            count[((from[i].prefix >> shift) & 0xFF) + 1]++;
        if (count[((from[0].prefix >> shift) & 0xFF) + 1] == n)
            continue; /* one octet for all: nothing to order */
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (Py_ssize_t i = 0; i < n; i++)
            to[count[(from[i].prefix >> shift) & 0xFF]++] = from[i];
        Item *swap = from;
        from = to;
        to = swap;
    }
    /* the keys put in that order in place, a cycle of the permutation at a time
     * (a place done has its index -1) */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (from[i].index < 0)
            continue;
        Key first = keys[i];
        Py_ssize_t at = i;
        for (;;) {
            Py_ssize_t next = from[at].index;
            from[at].index = -1;
            if (next == i) {
                keys[at] = first;
                break;
            }
            keys[at] = keys[next];
            at = next;
        }
    }
    for (Py_ssize_t start = 0, end; start < n; start = end) {
        for (end = start + 1; end < n && from[end].prefix == from[start].prefix; end++)
            ;
        if (end - start > 1)
            qsort(keys + start, (size_t)(end - start), sizeof(Key), key_order);
    }
    PyMem_Free(items);
    return 0;
}

/* Sort the keys by text, the better rule first among equal texts, and keep that one. */
static int
build_sorted(Build *b, Py_ssize_t nkeys)
{
    if (sort_keys(b->keys, nkeys) < 0)
        return -1;
    Py_ssize_t count = 0;
    for (Py_ssize_t k = 0; k < nkeys; k++) {
        Key *key = &b->keys[k];
        if (count && key->n == b->keys[count - 1].n && memcmp(key->s, b->keys[count - 1].s, (size_t)key->n) == 0) {
            add_loser(b, key);
            continue;
        }
        b->keys[count++] = *key;
    }
    b->nkeys = count;
    return 0;
}

/* Sort the wildcard rules by priority, then allow before disallow, then file order
 * (they come in file order): a stable radix sort, on the octets that differ. */
static int
sort_wild(Build *b)
{
    Py_ssize_t n = b->nwild;
    if (n < 2)
        return 0;
    struct item {
        uint64_t key;
        Py_ssize_t index;
    } *items = PyMem_Malloc(2 * (size_t)n * sizeof(struct item));
    Wild *sorted = PyMem_Malloc((size_t)n * sizeof(Wild));
    if (!items || !sorted) {
        PyMem_Free(items);
        PyMem_Free(sorted);
        PyErr_NoMemory();
        return -1;
    }
    struct item *from = items, *to = items + n;
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    for (Py_ssize_t k = 0; k < n; k++) {
        const Wild *w = &b->wild[k];
        from[k].key = ~((uint64_t)w->priority << 1 | w->allow); /* ascending key: descending rank */
        from[k].index = k;
        all_or |= from[k].key;
        all_and &= from[k].key;
    }
    for (int shift = 0; shift < 64; shift += 8) {
        if ((((all_or ^ all_and) >> shift) & 0xFF) == 0)
            continue; /* the same octet everywhere */
        Py_ssize_t counts[257] = {0};
        for (Py_ssize_t k = 0; k < n; k++)
            counts[((from[k].key >> shift) & 0xFF) + 1]++;
        for (int d = 0; d < 256; d++)
            counts[d + 1] += counts[d];
        for (Py_ssize_t k = 0; k < n; k++)
            to[counts[(from[k].key >> shift) & 0xFF]++] = from[k];
        struct item *swap = from;
        from = to;
        to = swap;
    }
    for (Py_ssize_t k = 0; k < n; k++)
        sorted[k] = b->wild[from[k].index];
    PyMem_Free(items);
    PyMem_Free(b->wild);
    b->wild = sorted;
    return 0;
}

static int
extra_order(const void *x, const void *y)
{
    uint32_t a = ((const Extra *)x)->code >> 1, b = ((const Extra *)y)->code >> 1;
    return (a > b) - (a < b);
}

#define PUT(p, i, value, wide) \
    ((wide) ? (void)(((uint32_t *)(p))[i] = (uint32_t)(value)) : (void)(((uint16_t *)(p))[i] = (uint16_t)(value)))

/* The matcher of what was built: one object holding the tables and a copy of the
 * text (see FastMatcher). */
static FastMatcher *
pack(PyTypeObject *type, Build *b)
{
    qsort(b->extra, (size_t)b->nextra, sizeof(Extra), extra_order);
    size_t text_size = 0;
    uint32_t max_line = 0;
    Py_ssize_t max_priority = 0;
    for (Py_ssize_t k = 0; k < b->nkeys; k++) {
        text_size += (size_t)b->keys[k].n;
        if (b->keys[k].code >> 1 > max_line)
            max_line = b->keys[k].code >> 1;
    }
    for (Py_ssize_t p = 0; p < b->npieces; p++)
        text_size += (size_t)b->pieces[p].n;
    for (Py_ssize_t w = 0; w < b->nwild; w++) {
        if (b->wild[w].code >> 1 > max_line)
            max_line = b->wild[w].code >> 1;
        if (b->wild[w].priority > max_priority)
            max_priority = b->wild[w].priority;
    }
    for (Py_ssize_t e = 0; e < b->nextra; e++)
        text_size += (size_t)b->extra[e].text.n;
    size_t nslots = b->slots ? (size_t)1 << (64 - b->shift) : 0;
    size_t noffs = (size_t)(b->nkeys + b->npieces + b->nextra + 1);
    if (text_size > UINT32_MAX || noffs > UINT32_MAX || b->maxlen > (Py_ssize_t)UINT32_MAX
        || max_priority > (Py_ssize_t)UINT32_MAX || max_line >= ((uint32_t)1 << 30)) {
        PyErr_SetString(PyExc_ValueError, "rules too large for FastMatcher");
        return NULL;
    }
    int wide = !(text_size <= 0xFFFF && noffs <= 0xFFFF && max_line < ((uint32_t)1 << 14) && max_priority <= 0xFFFF);
    size_t w = wide ? 4 : 2;
    size_t text_at = w * (noffs + (size_t)b->nkeys) + 4 * w * (size_t)b->nwild;
    if (text_at > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "rules too large for FastMatcher");
        return NULL;
    }
    size_t rest_at = (sizeof(FastMatcher) + text_at + text_size + 3) & ~(size_t)3;
    size_t size = rest_at + 4 * (size_t)b->nextra + w * nslots + (b->slots ? 4 + (size_t)b->maxlen + 1 : 0);
    FastMatcher *self = PyObject_Malloc(size);
    if (self == NULL)
        return (FastMatcher *)PyErr_NoMemory();
    PyObject_Init((PyObject *)self, type);
    char *at = (char *)self + sizeof(FastMatcher);
    char *offs = at, *key_rule = offs + w * noffs, *wild = key_rule + w * (size_t)b->nkeys;
    char *text = at + text_at, *end = text;
    uint32_t *extra = (uint32_t *)((char *)self + rest_at);
    char *slots = (char *)(extra + b->nextra);
    size_t o = 0;
    for (Py_ssize_t k = 0; k < b->nkeys; k++) {
        PUT(offs, o++, end - text, wide);
        PUT(key_rule, k, b->keys[k].code, wide);
        memcpy(end, b->keys[k].s, (size_t)b->keys[k].n);
        end += b->keys[k].n;
    }
    for (Py_ssize_t p = 0; p < b->npieces; p++) {
        PUT(offs, o++, end - text, wide);
        memcpy(end, b->pieces[p].s, (size_t)b->pieces[p].n);
        end += b->pieces[p].n;
    }
    for (Py_ssize_t e = 0; e < b->nextra; e++) {
        PUT(offs, o++, end - text, wide);
        extra[e] = b->extra[e].code;
        memcpy(end, b->extra[e].text.s, (size_t)b->extra[e].text.n);
        end += b->extra[e].text.n;
    }
    PUT(offs, o, end - text, wide);
    memset(end, 0, (size_t)((char *)extra - end)); /* the alignment's octets */
    for (Py_ssize_t k = 0; k < b->nwild; k++) {
        const Wild *from = &b->wild[k];
        uint32_t flags = (from->code >> 1) << 2 | (uint32_t)from->allow << 1 | from->anchored;
        uint32_t first = (uint32_t)(from->pieces - b->pieces);
        if (wide)
            ((Glob32 *)wild)[k] = (Glob32){(uint32_t)from->priority, flags, first, (uint32_t)from->npieces};
        else
            ((Glob16 *)wild)[k] = (Glob16){(uint16_t)from->priority, (uint16_t)flags, (uint16_t)first,
                                           (uint16_t)from->npieces};
    }
    if (b->slots) {
        uint32_t maxlen = (uint32_t)b->maxlen;
        for (size_t i = 0; i < nslots; i++) /* -1 (free) as all ones */
            PUT(slots, i, (uint32_t)b->slots[i], wide);
        memcpy(slots + w * nslots, &maxlen, sizeof(uint32_t));
        memcpy(slots + w * nslots + sizeof(uint32_t), b->has_len, (size_t)b->maxlen + 1);
    }
    self->vectorcall = fast_vectorcall;
    self->nkeys = (uint32_t)b->nkeys;
    self->nwild = (uint32_t)b->nwild;
    self->npieces = (uint32_t)b->npieces;
    self->nextra = (uint32_t)b->nextra;
    self->text_at = (uint32_t)text_at;
    self->shift = b->slots ? (unsigned char)b->shift : 0;
    self->wide = (unsigned char)wide;
    return self;
}
#undef PUT

/* What a pattern's octets hold. */
enum { STAR = 1, DOLLAR = 2, PERCENT = 4 };
static unsigned char octet_class[256];

enum { LITERAL, WILDCARD, CANONICAL, SKIP };

/* Whether a buffer holds C unsigned ints: an array("I"), or octets (bytes, format
 * "B") of a whole number of them, as select_groups gives a group's codes (no array
 * made for them on a file's first question). */
static int
uint_buffer(const Py_buffer *view)
{
    if (view->format == NULL || strcmp(view->format, "B") == 0)
        return view->len % (Py_ssize_t)sizeof(unsigned int) == 0;
    return view->itemsize == (Py_ssize_t)sizeof(unsigned int) && strcmp(view->format, "I") == 0;
}

/* The canonical key of a literal pattern written with "%" or non-ASCII text, as
 * urls.canonical_path gives it: the pattern's UTF-8 octets (urls.utf8_octets:
 * undecodable bytes kept by surrogateescape as themselves) in canonical form
 * (canonical_path_c, as a URL's path). No Python code runs for it. */
static PyObject *
literal_key(PyObject *pattern)
{
    PyObject *octets = PyUnicode_AsEncodedString(pattern, "utf-8", "surrogateescape");
    if (octets == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return NULL;
        PyErr_Clear();
        if ((octets = PyUnicode_AsEncodedString(pattern, "utf-8", "surrogatepass")) == NULL)
            return NULL;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(octets);
    char *buf = PyMem_Malloc((size_t)(n ? n : 1) * 3);
    PyObject *key = NULL;
    if (buf == NULL)
        PyErr_NoMemory();
    else
        key = PyUnicode_DecodeASCII(buf, canonical_path_c(PyBytes_AS_STRING(octets), n, buf), NULL);
    PyMem_Free(buf);
    Py_DECREF(octets);
    return key;
}

/* FastMatcher(patterns: list[str], codes: array("I") (line << 1 | allow), canon,
 *             hash_above: int)
 *
 * ``canon(pattern)`` is called for a wildcard pattern with "%" or non-ASCII text
 * only: it returns ``(priority, pieces: list[str], anchored)`` (or the canonical
 * key of a literal rule, str; empty: no rule); such a literal rule's key is made
 * here (literal_key). The literal
 * keys are hashed when there are more than ``hash_above``, else sorted. Every
 * rule is named by its line (the codes' lines are distinct, as a file's are). */
static PyObject *
fast_new(PyTypeObject *type, PyObject *args, PyObject *Py_UNUSED(kwds))
{
    PyObject *patterns_arg, *codes_arg, *canon;
    Py_ssize_t hash_above;
    if (!PyArg_ParseTuple(args, "OOOn:FastMatcher", &patterns_arg, &codes_arg, &canon, &hash_above))
        return NULL;
    PyObject *patterns = PySequence_Tuple(patterns_arg);
    if (patterns == NULL)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(codes_arg, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(patterns);
        return NULL;
    }
    FastMatcher *self = NULL;
    Build build = {0}, *bd = &build;
    unsigned char *kinds = NULL;
    PyObject **forms = NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(patterns);
    if (!uint_buffer(&view) || view.len / (Py_ssize_t)sizeof(unsigned int) != count || count >= ((Py_ssize_t)1 << 30)) {
        PyErr_SetString(PyExc_ValueError, "one code (array of \"I\", or its octets) per pattern");
        goto fail;
    }
    const unsigned int *codes = view.buf;
    kinds = PyMem_Malloc((size_t)(count ? count : 1));
    bd->keys = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(Key));
    bd->extra = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(Extra));
    if (!kinds || !bd->keys || !bd->extra) {
        PyErr_NoMemory();
        goto fail;
    }
    /* One look at each pattern: a plain literal becomes a key at once; the others
     * are counted, and those with "%" or non-ASCII text put in canonical form (an
     * extra rule keeps how they are written). */
    Py_ssize_t nkeys = 0, nwild = 0, npieces = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *pattern = PyTuple_GET_ITEM(patterns, i);
        if (!PyUnicode_Check(pattern)) {
            PyErr_SetString(PyExc_TypeError, "patterns are str");
            goto fail;
        }
        const char *s = (const char *)PyUnicode_DATA(pattern);
        Py_ssize_t n = PyUnicode_GET_LENGTH(pattern);
        unsigned char found = 0;
        if (PyUnicode_IS_ASCII(pattern)) {
            for (Py_ssize_t c = 0; c < n; c++)
                found |= octet_class[(unsigned char)s[c]];
        }
        else
            found = PERCENT; /* non-ASCII: canonical form from Python */
        if (n > KEY_MAX_LENGTH) {
            PyErr_SetString(PyExc_ValueError, "a pattern too long for FastMatcher");
            goto fail;
        }
        if (!(found & (STAR | PERCENT)) && !(n && s[n - 1] == '$')) {
            bd->keys[nkeys++] = (Key){s, (int32_t)i, codes[i], (unsigned int)n, codes[i] & 1,
                                      (found & DOLLAR) != 0, 0};
            kinds[i] = LITERAL;
            continue;
        }
        if (!(found & PERCENT)) {
            Py_ssize_t stars = 0;
            for (Py_ssize_t c = 0; c < n; c++)
                stars += s[c] == '*';
            kinds[i] = WILDCARD;
            nwild++;
            npieces += stars + 1;
            continue;
        }
        if (forms == NULL && (forms = PyMem_Calloc((size_t)count, sizeof(PyObject *))) == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        /* a literal (no "*", no final "$"): its key in C, else canon() in Python */
        int literal = PyUnicode_FindChar(pattern, '*', 0, n, 1) == -1
                      && !(n && PyUnicode_READ_CHAR(pattern, n - 1) == '$');
        PyObject *form = literal ? literal_key(pattern) : PyObject_CallOneArg(canon, pattern);
        if (form == NULL)
            goto fail;
        forms[i] = form;
        kinds[i] = CANONICAL;
        Str written;
        if (written_text(bd, pattern, &written) < 0)
            goto fail;
        if (PyUnicode_Check(form)) {
            Str text;
            if (ascii_str(form, &text) < 0)
                goto fail;
            if (text.n == 0) {
                kinds[i] = SKIP;
                add_extra(bd, codes[i], written);
                continue;
            }
            if (text.n > KEY_MAX_LENGTH) {
                PyErr_SetString(PyExc_ValueError, "a pattern too long for FastMatcher");
                goto fail;
            }
            int same = written.n == text.n && memcmp(written.s, text.s, (size_t)text.n) == 0;
            bd->keys[nkeys++] = (Key){text.s, (int32_t)i, codes[i], (unsigned int)text.n, codes[i] & 1, 1, !same};
            if (!same)
                add_extra(bd, codes[i], written);
        }
        else if (PyTuple_Check(form) && PyTuple_GET_SIZE(form) == 3 && PyList_Check(PyTuple_GET_ITEM(form, 1))
                 && PyList_GET_SIZE(PyTuple_GET_ITEM(form, 1)) > 0) {
            nwild++;
            npieces += PyList_GET_SIZE(PyTuple_GET_ITEM(form, 1));
            add_extra(bd, codes[i], written);
        }
        else {
            PyErr_SetString(PyExc_TypeError, "canon() gives a str or (priority, pieces, anchored)");
            goto fail;
        }
    }
    if (nkeys < count) {
        Key *keys = PyMem_Realloc(bd->keys, (size_t)(nkeys ? nkeys : 1) * sizeof(Key));
        if (keys)
            bd->keys = keys;
    }
    if (nwild) {
        bd->wild = PyMem_Malloc((size_t)nwild * sizeof(Wild));
        bd->pieces = PyMem_Malloc((size_t)npieces * sizeof(Str));
        if (!bd->wild || !bd->pieces) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    Py_ssize_t w = 0, p = 0;
    for (Py_ssize_t i = 0; w < nwild; i++) {
        PyObject *pattern = PyTuple_GET_ITEM(patterns, i), *form = forms ? forms[i] : NULL;
        if (kinds[i] == LITERAL || kinds[i] == SKIP || (kinds[i] == CANONICAL && PyUnicode_Check(form)))
            continue;
        Wild *wild = &bd->wild[w++];
        wild->code = codes[i];
        wild->allow = codes[i] & 1;
        wild->pieces = &bd->pieces[p];
        if (form) {
            PyObject *pieces = PyTuple_GET_ITEM(form, 1);
            int anchored = PyObject_IsTrue(PyTuple_GET_ITEM(form, 2));
            wild->priority = PyLong_AsSsize_t(PyTuple_GET_ITEM(form, 0));
            if (anchored < 0 || (wild->priority == -1 && PyErr_Occurred()))
                goto fail;
            if (wild->priority < 0) {
                PyErr_SetString(PyExc_ValueError, "a negative priority");
                goto fail;
            }
            wild->anchored = (unsigned char)anchored;
            wild->npieces = PyList_GET_SIZE(pieces);
            for (Py_ssize_t j = 0; j < wild->npieces; j++)
                if (ascii_str(PyList_GET_ITEM(pieces, j), &bd->pieces[p++]) < 0)
                    goto fail;
            continue;
        }
        /* Plain ASCII: the pieces are the pattern split at each "*"; the priority
         * is its length. */
        const char *s = (const char *)PyUnicode_1BYTE_DATA(pattern);
        Py_ssize_t n = PyUnicode_GET_LENGTH(pattern);
        wild->priority = n;
        wild->anchored = n && s[n - 1] == '$';
        n -= wild->anchored;
        Py_ssize_t start = 0;
        for (Py_ssize_t c = 0; c <= n; c++) {
            if (c == n || s[c] == '*') {
                bd->pieces[p].s = s + start;
                bd->pieces[p++].n = c - start;
                start = c + 1;
            }
        }
        wild->npieces = &bd->pieces[p] - wild->pieces;
    }
    bd->nwild = nwild;
    bd->npieces = npieces;
    if (sort_wild(bd) < 0)
        goto fail;
    if (nkeys > hash_above) {
        if (build_hash(bd, nkeys) < 0)
            goto fail;
    }
    else if (build_sorted(bd, nkeys) < 0)
        goto fail;
    self = pack(type, bd);
    goto done;
fail:
    Py_CLEAR(self);
done:
    build_free(bd);
    if (forms)
        for (Py_ssize_t i = 0; i < count; i++)
            Py_XDECREF(forms[i]);
    PyMem_Free(forms);
    PyMem_Free(kinds);
    PyBuffer_Release(&view);
    Py_DECREF(patterns);
    return (PyObject *)self;
}

static PyMethodDef fast_methods[] = {
    {"url_rule", (PyCFunction)fast_url_rule, METH_O,
     "url_rule(url) -> the rule that decides the URL (best_rule of its canonical path), or None."},
    {"best_rule", (PyCFunction)fast_best_rule, METH_O,
     "best_rule(canonical_path) -> the deciding rule as written (matcher.Rule), or None when no rule matches."},
    {"written", (PyCFunction)fast_written, METH_NOARGS, "written() -> every rule as written, in file order."},
    {"fill", (PyCFunction)fast_fill, METH_VARARGS,
     "fill(records, (disallow_key, allow_key)) -> the records with every rule written on its line."},
    {"__sizeof__", (PyCFunction)fast_sizeof, METH_NOARGS, "The matcher's size in memory, in bytes."},
    {NULL, NULL, 0, NULL},
};

/* A matcher is its group's matcher as robotstxt.py uses one (the Matcher of
 * matcher.py): ``allowed`` is the matcher itself, so that a group needs no Python
 * object around it. */
static PyObject *
fast_allowed(PyObject *self, void *Py_UNUSED(closure))
{
    Py_INCREF(self);
    return self;
}

static PyGetSetDef fast_getset[] = {
    {"allowed", fast_allowed, NULL, "The matcher itself: allowed(url) decides a URL.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FastMatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "scrapy_rfc9309.core._speedups.FastMatcher",
    .tp_basicsize = sizeof(FastMatcher),
    .tp_itemsize = 0,
    .tp_dealloc = (destructor)fast_dealloc,
    .tp_vectorcall_offset = offsetof(FastMatcher, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "One merged group's rules, decided in C.",
    .tp_methods = fast_methods,
    .tp_getset = fast_getset,
    .tp_new = fast_new,
};

/* configure(path_of, rule_type): the canonical path of a URL that is not decoded in
 * C (urlnorm.path_of), and the type of a rule as written (matcher.Rule, a tuple of
 * (allow, pattern, line)), for every matcher. */
static PyObject *
configure(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *path_of, *rule;
    if (!PyArg_ParseTuple(args, "OO!:configure", &path_of, &PyType_Type, &rule))
        return NULL;
    if (!PyCallable_Check(path_of) || !PyType_IsSubtype((PyTypeObject *)rule, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "configure(path_of: callable, rule_type: a tuple type)");
        return NULL;
    }
    Py_INCREF(path_of);
    Py_XSETREF(path_of_fn, path_of);
    Py_INCREF(rule);
    Py_XSETREF(rule_type, (PyTypeObject *)rule);
    Py_RETURN_NONE;
}

/* ---- the line scanner of parser.py ---------------------------------------------
 * scan_lines(text, keys) -> [(kind, value, lineno)] for the lines that hold a known
 * record, with exactly the semantics of parser._LINE: optional leading [ \t\v\f],
 * a key (case-insensitive; ``keys`` is a list of (lowercase key, kind), longest
 * first), then "[ws]*:" or, for a one-word value, whitespace; the value runs to
 * "#" or the end of the line, without its trailing whitespace. ``text`` ends with
 * "\n" and has no "\r". An Allow/Disallow value with "*", "$", "%" or a non-ASCII
 * character has SPECIAL (8) added to its kind.
 */
static int
is_ws(Py_UCS4 c)
{
    return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

/* The record keys of a scan: at most 64 (lower-case key, kind) pairs, longest first. */
typedef struct {
    int ukind;
    const void *data;
    Py_ssize_t n;
    Py_ssize_t nkeys;
    const char *key_s[64];
    Py_ssize_t key_n[64];
    long key_kind[64];
    signed char head[26], next[64]; /* the keys by first letter, each chain in the keys' order */
} Scanner;

/* The table of the keys last read, and the list and pairs it was read from (held):
 * every scan is given the same list (parser._KEY_LIST), so a file's first question
 * reads its pairs once, not once per pass (each pass would touch every pair, its
 * key and its kind again; after other work has left the caches cold, that cost
 * more than a small file's scan). */
static Scanner keys_read;
static PyObject *keys_list = NULL, *keys_pairs[64];

static int
scanner_keys(Scanner *sc, PyObject *keys)
{
    if (!PyList_Check(keys)) {
        PyErr_SetString(PyExc_TypeError, "keys must be a list");
        return -1;
    }
    if (keys == keys_list && PyList_GET_SIZE(keys) == keys_read.nkeys) {
        Py_ssize_t k = 0;
        while (k < keys_read.nkeys && PyList_GET_ITEM(keys, k) == keys_pairs[k])
            k++;
        if (k == keys_read.nkeys) { /* the same pairs: tuples, of a str and an int, as read */
            *sc = keys_read;
            return 0;
        }
    }
    sc->nkeys = PyList_GET_SIZE(keys);
    if (sc->nkeys > 64) {
        PyErr_SetString(PyExc_ValueError, "at most 64 keys");
        return -1;
    }
    for (Py_ssize_t k = 0; k < sc->nkeys; k++) {
        PyObject *pair = PyList_GET_ITEM(keys, k), *name;
        long kind;
        if (!PyArg_ParseTuple(pair, "Ul", &name, &kind))
            return -1;
        if (!PyUnicode_IS_ASCII(name)) {
            PyErr_SetString(PyExc_ValueError, "keys are ASCII");
            return -1;
        }
        sc->key_s[k] = (const char *)PyUnicode_1BYTE_DATA(name);
        sc->key_n[k] = PyUnicode_GET_LENGTH(name);
        sc->key_kind[k] = kind;
        if (sc->key_n[k] == 0 || sc->key_s[k][0] < 'a' || sc->key_s[k][0] > 'z') {
            PyErr_SetString(PyExc_ValueError, "keys start with a lower-case letter");
            return -1;
        }
    }
    memset(sc->head, -1, sizeof(sc->head));
    for (Py_ssize_t k = sc->nkeys - 1; k >= 0; k--) {
        int letter = sc->key_s[k][0] - 'a';
        sc->next[k] = sc->head[letter];
        sc->head[letter] = (signed char)k;
    }
    for (Py_ssize_t k = 0; k < keys_read.nkeys; k++)
        Py_CLEAR(keys_pairs[k]);
    for (Py_ssize_t k = 0; k < sc->nkeys; k++) {
        keys_pairs[k] = PyList_GET_ITEM(keys, k);
        Py_INCREF(keys_pairs[k]);
    }
    Py_INCREF(keys);
    Py_XSETREF(keys_list, keys);
    keys_read = *sc;
    return 0;
}

static int
scanner_init(Scanner *sc, PyObject *text, PyObject *keys)
{
    if (scanner_keys(sc, keys) < 0)
        return -1;
    sc->ukind = PyUnicode_KIND(text);
    sc->data = PyUnicode_DATA(text);
    sc->n = PyUnicode_GET_LENGTH(text);
    return 0;
}

#define AT(sc, i) PyUnicode_READ((sc)->ukind, (sc)->data, (i))

/* The record written on the line [start, end): its kind (an allow or disallow
 * pattern that is not a plain literal gets 8 added), and its value's bounds; -1
 * when the line holds no known record. Inlined twice (see line_record): for a
 * text of 1-octet characters, and for any. */
#undef AT
#define AT(sc, i) PyUnicode_READ(ukind, (sc)->data, (i))
HOT_INLINE long
line_record_of(const Scanner *sc, int ukind, Py_ssize_t start, Py_ssize_t end, Py_ssize_t *value_start,
               Py_ssize_t *value_end)
{
    Py_ssize_t p = start;
    while (p < end && is_ws(AT(sc, p)))
        p++;
    if (p >= end)
        return -1;
    Py_UCS4 first = AT(sc, p);
    if (first >= 'A' && first <= 'Z')
        first += 32;
    if (first < 'a' || first > 'z')
        return -1;
    for (Py_ssize_t k = sc->head[first - 'a']; k >= 0; k = sc->next[k]) {
        Py_ssize_t kn = sc->key_n[k], i;
        if (p + kn > end)
            continue;
        for (i = 0; i < kn; i++) {
            Py_UCS4 c = AT(sc, p + i);
            if (c >= 'A' && c <= 'Z')
                c += 32;
            if (c != (Py_UCS4)(unsigned char)sc->key_s[k][i])
                break;
        }
        if (i < kn)
            continue;
        Py_ssize_t q = p + kn, vstart, vend;
        Py_ssize_t r = q;
        while (r < end && is_ws(AT(sc, r)))
            r++;
        if (r < end && AT(sc, r) == ':') {
            vstart = r + 1;
            while (vstart < end && is_ws(AT(sc, vstart)))
                vstart++;
            vend = vstart;
            while (vend < end && AT(sc, vend) != '#')
                vend++;
            while (vend > vstart && is_ws(AT(sc, vend - 1)))
                vend--;
        }
        else if (r > q) {
            /* whitespace instead of the colon: one word, then only whitespace */
            Py_ssize_t w = r;
            while (w < end) {
                Py_UCS4 c = AT(sc, w);
                if (is_ws(c) || c == '#')
                    break;
                w++;
            }
            if (w == r)
                continue;
            Py_ssize_t t = w;
            while (t < end && is_ws(AT(sc, t)))
                t++;
            if (t < end && AT(sc, t) != '#')
                continue;
            vstart = r;
            vend = w;
        }
        else
            continue;
        long kind = sc->key_kind[k];
        if (kind == 1 || kind == 2) { /* allow, disallow: flag a pattern that is not a plain literal */
            for (Py_ssize_t v = vstart; v < vend; v++) {
                Py_UCS4 c = AT(sc, v);
                if (c == '*' || c == '$' || c == '%' || c >= 0x80) {
                    kind += 8;
                    break;
                }
            }
        }
        *value_start = vstart;
        *value_end = vend;
        return kind;
    }
    return -1;
}
#undef AT
#define AT(sc, i) PyUnicode_READ((sc)->ukind, (sc)->data, (i))

static long
line_record(const Scanner *sc, Py_ssize_t start, Py_ssize_t end, Py_ssize_t *value_start, Py_ssize_t *value_end)
{
    if (sc->ukind == PyUnicode_1BYTE_KIND)
        return line_record_of(sc, PyUnicode_1BYTE_KIND, start, end, value_start, value_end);
    return line_record_of(sc, sc->ukind, start, end, value_start, value_end);
}

/* The end of the line starting at start (the index of its "\n", or n). */
static Py_ssize_t
line_end(const Scanner *sc, Py_ssize_t start)
{
    if (sc->ukind == PyUnicode_1BYTE_KIND) {
        const char *found = memchr((const char *)sc->data + start, '\n', (size_t)(sc->n - start));
        return found ? found - (const char *)sc->data : sc->n;
    }
    Py_ssize_t end = start;
    while (end < sc->n && AT(sc, end) != '\n')
        end++;
    return end;
}

static PyObject *
scan_lines(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *text, *keys;
    Scanner sc;
    if (!PyArg_ParseTuple(args, "UO!:scan_lines", &text, &PyList_Type, &keys) || scanner_init(&sc, text, keys) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t start = 0, lineno = 0;
    while (start < sc.n) {
        Py_ssize_t end = line_end(&sc, start), vstart, vend;
        lineno++;
        long kind = line_record(&sc, start, end, &vstart, &vend);
        if (kind >= 0) {
            PyObject *value = PyUnicode_Substring(text, vstart, vend);
            if (value == NULL)
                goto fail;
            PyObject *item = Py_BuildValue("(lNn)", kind, value, lineno);
            if (item == NULL || PyList_Append(out, item) < 0) {
                Py_XDECREF(item);
                goto fail;
            }
            Py_DECREF(item);
        }
        start = end + 1;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* Record kinds (parser.py). */
enum { K_USER_AGENT = 0, K_ALLOW = 1, K_DISALLOW = 2, K_SITEMAP = 3, K_HOST = 7, K_SPECIAL = 8 };

/* ---- records_text(text, keys, short_keys[, omit]) -> the text reduced to its known
 * records: each on its own line number as short_keys[kind] followed by its value,
 * every other line empty (parser.records_text, without a Python object per
 * record). ``omit``, codes (line << 1 | allow, array("I")) by line, names rules
 * left out (their lines empty); the text has as many lines either way. */
typedef struct {
    long kind;
    Py_ssize_t vstart, vend, line;
} Found;

/* The text of the records ``found`` (in line order), each on its own line as
 * short_keys[kind] and its value, every other line empty, up to last_record: the
 * line of the last record, kept or left out (the text is as many lines long as
 * with the rules left out). */
static PyObject *
found_text(const Scanner *sc, const Found *found, Py_ssize_t nfound, PyObject *short_keys, Py_ssize_t last_record)
{
    Py_ssize_t nshort = PyTuple_GET_SIZE(short_keys), total = 0, last = 1;
    Py_UCS4 maxchar = 127;
    for (Py_ssize_t f = 0; f < nfound; f++) {
        const Found *r = &found[f];
        if (r->kind >= nshort) {
            PyErr_SetString(PyExc_ValueError, "a kind without a short key");
            return NULL;
        }
        total += (r->line - last) + PyUnicode_GET_LENGTH(PyTuple_GET_ITEM(short_keys, r->kind)) + (r->vend - r->vstart);
        if (sc->ukind != PyUnicode_1BYTE_KIND || maxchar < 255) {
            for (Py_ssize_t v = r->vstart; v < r->vend; v++) {
                Py_UCS4 c = AT(sc, v);
                if (c > maxchar)
                    maxchar = c;
            }
        }
        last = r->line;
    }
    total += last_record - last; /* the lines of the rules left out after the last record kept */
    PyObject *out = PyUnicode_New(total, maxchar);
    if (out == NULL)
        return NULL;
    int okind = PyUnicode_KIND(out);
    void *odata = PyUnicode_DATA(out);
    Py_ssize_t o = 0;
    last = 1;
    for (Py_ssize_t f = 0; f < nfound; f++) {
        const Found *r = &found[f];
        for (; last < r->line; last++)
            PyUnicode_WRITE(okind, odata, o++, '\n');
        PyObject *key = PyTuple_GET_ITEM(short_keys, r->kind);
        const char *ks = (const char *)PyUnicode_1BYTE_DATA(key);
        for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(key); i++)
            PyUnicode_WRITE(okind, odata, o++, (Py_UCS4)(unsigned char)ks[i]);
        for (Py_ssize_t v = r->vstart; v < r->vend; v++)
            PyUnicode_WRITE(okind, odata, o++, AT(sc, v));
    }
    for (; last < last_record; last++)
        PyUnicode_WRITE(okind, odata, o++, '\n');
    return out;
}

/* Short keys are ASCII str (0), or an error is set (-1). */
static int
check_short_keys(PyObject *short_keys)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(short_keys); k++) {
        PyObject *key = PyTuple_GET_ITEM(short_keys, k);
        if (!PyUnicode_Check(key) || !PyUnicode_IS_ASCII(key)) {
            PyErr_SetString(PyExc_TypeError, "short keys are ASCII str");
            return -1;
        }
    }
    return 0;
}

/* Appends a record to a growable array of them (0), or sets an error (-1). */
static int
add_found(Found **found, Py_ssize_t *nfound, Py_ssize_t *cap, Found record)
{
    if (*nfound == *cap) {
        Py_ssize_t grown = *cap ? *cap * 2 : 32;
        Found *more = PyMem_Realloc(*found, (size_t)grown * sizeof(Found));
        if (more == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *found = more;
        *cap = grown;
    }
    (*found)[(*nfound)++] = record;
    return 0;
}

static PyObject *
records_text(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *text, *keys, *short_keys, *omit_arg = Py_None, *out = NULL;
    Scanner sc;
    if (!PyArg_ParseTuple(args, "UO!O!|O:records_text", &text, &PyList_Type, &keys, &PyTuple_Type, &short_keys,
                          &omit_arg)
        || scanner_init(&sc, text, keys) < 0 || check_short_keys(short_keys) < 0)
        return NULL;
    Py_buffer omit = {0};
    Py_ssize_t nomit = 0;
    if (omit_arg != Py_None) {
        if (PyObject_GetBuffer(omit_arg, &omit, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            return NULL;
        if (!uint_buffer(&omit)) {
            PyBuffer_Release(&omit);
            PyErr_SetString(PyExc_ValueError, "omit: an array of \"I\", or its octets");
            return NULL;
        }
        nomit = omit.len / (Py_ssize_t)sizeof(unsigned int);
    }
    const unsigned int *omitted = omit.buf;
    Found *found = NULL;
    Py_ssize_t nfound = 0, cap = 0, start = 0, lineno = 0, last_record = 1, next_omit = 0;
    while (start < sc.n) {
        Py_ssize_t end = line_end(&sc, start), vstart, vend;
        lineno++;
        /* a rule left out is not kept (its line stays, empty): omit names rules
         * only (a group's codes, as select_groups gives them), so its lines are
         * not read again */
        while (next_omit < nomit && (Py_ssize_t)(omitted[next_omit] >> 1) < lineno)
            next_omit++;
        if (next_omit < nomit && (Py_ssize_t)(omitted[next_omit] >> 1) == lineno) {
            start = end + 1;
            last_record = lineno;
            continue;
        }
        long kind = line_record(&sc, start, end, &vstart, &vend);
        start = end + 1;
        if (kind < 0)
            continue;
        last_record = lineno;
        if (add_found(&found, &nfound, &cap, (Found){kind, vstart, vend, lineno}) < 0)
            goto done;
    }
    out = found_text(&sc, found, nfound, short_keys, last_record);
done:
    PyMem_Free(found);
    if (omit_arg != Py_None)
        PyBuffer_Release(&omit);
    return out;
}

/* The records of the octets s[first:n] (see reduce_octets), written at o (NULL:
 * counted only), at most cap octets; their length, or -1 when they would be
 * longer than cap (or on an error, set). */
static Py_ssize_t
write_records(Scanner *sc, const unsigned char *s, Py_ssize_t first, Py_ssize_t n, Py_ssize_t max_line,
              PyObject *short_keys, char *o, Py_ssize_t cap)
{
    Py_ssize_t nshort = PyTuple_GET_SIZE(short_keys), total = 0;
    Py_ssize_t p = first, lineno = 0, last = 1, next_cr = first - 1, next_lf = first - 1;
    sc->ukind = PyUnicode_1BYTE_KIND;
    sc->data = s;
    sc->n = n;
    while (p < n) {
        /* the next CR and LF, each found again only once passed: one pass over the body */
        if (next_cr < p) {
            const unsigned char *f = memchr(s + p, '\r', (size_t)(n - p));
            next_cr = f ? f - s : n;
        }
        if (next_lf < p) {
            const unsigned char *f = memchr(s + p, '\n', (size_t)(n - p));
            next_lf = f ? f - s : n;
        }
        Py_ssize_t end = next_cr < next_lf ? next_cr : next_lf, vstart, vend;
        lineno++;
        long kind = line_record(sc, p, end - p > max_line ? p + max_line : end, &vstart, &vend);
        if (kind >= 0) {
            if (kind >= nshort) {
                PyErr_SetString(PyExc_ValueError, "a kind without a short key");
                return -1;
            }
            PyObject *key = PyTuple_GET_ITEM(short_keys, kind);
            Py_ssize_t klen = PyUnicode_GET_LENGTH(key), need = (lineno - last) + klen + (vend - vstart);
            if (need > cap - total)
                return -1;
            if (o != NULL) {
                memset(o + total, '\n', (size_t)(lineno - last));
                memcpy(o + total + (lineno - last), PyUnicode_1BYTE_DATA(key), (size_t)klen);
                memcpy(o + total + (lineno - last) + klen, s + vstart, (size_t)(vend - vstart));
            }
            total += need;
            last = lineno;
        }
        p = end + 1;
        if (end < n && s[end] == '\r' && p < n && s[p] == '\n')
            p++;
    }
    return total;
}

/* Bodies below this size are reduced in one pass, into a buffer of their size
 * that is then shortened; larger ones in two, the first one counting, so that
 * nothing is allocated but the result. */
#define REDUCE_IN_ONE_PASS_BELOW (128 * 1024)

/* ---- reduce_octets(body, max_bytes, max_line, keys, short_keys) -> the records of
 * a robots.txt body as octets: parser.records_text of parser.prepare's text, as
 * UTF-8 with surrogate escapes (what RobotsTxt keeps), read from the body itself.
 * The parser's normalization is done as the lines are read (the first max_bytes
 * octets, a UTF-8 BOM or its start skipped, CR LF, CR and LF each end a line, a
 * line read up to max_line octets); the scanner reads the octets as Latin-1
 * (its syntax is ASCII, and a value's octets are written as they are, which is
 * what decoding them with surrogate escapes and encoding them back gives).
 * Neither a copy of the body nor its text is made: freed, a large temporary
 * would leave a hole in the heap that the small objects allocated since keep
 * resident. */
static PyObject *
reduce_octets(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer body;
    Py_ssize_t max_bytes, max_line;
    PyObject *keys, *short_keys, *out = NULL;
    Scanner sc;
    if (!PyArg_ParseTuple(args, "y*nnO!O!:reduce_octets", &body, &max_bytes, &max_line, &PyList_Type, &keys,
                          &PyTuple_Type, &short_keys))
        return NULL;
    if (scanner_keys(&sc, keys) < 0)
        goto done;
    if (max_bytes < 0 || max_line < 1) {
        PyErr_SetString(PyExc_ValueError, "max_bytes >= 0 and max_line >= 1");
        goto done;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(short_keys); k++) {
        PyObject *key = PyTuple_GET_ITEM(short_keys, k);
        if (!PyUnicode_Check(key) || !PyUnicode_IS_ASCII(key)) {
            PyErr_SetString(PyExc_TypeError, "short keys are ASCII str");
            goto done;
        }
    }
    const unsigned char *s = body.buf;
    Py_ssize_t n = body.len < max_bytes ? body.len : max_bytes, first = 0, total;
    if (n > 0 && s[0] == 0xEF)
        first = (n >= 3 && s[1] == 0xBB && s[2] == 0xBF) ? 3 : (n >= 2 && s[1] == 0xBB) ? 2 : 1;
    if (n - first < REDUCE_IN_ONE_PASS_BELOW) {
        /* The records are never longer than the text with the parser's short keys
         * (each line no longer than it was); other keys may not fit: counted then. */
        out = PyBytes_FromStringAndSize(NULL, n - first);
        if (out == NULL)
            goto done;
        total = write_records(&sc, s, first, n, max_line, short_keys, PyBytes_AS_STRING(out), n - first);
        if (total >= 0) {
            _PyBytes_Resize(&out, total);
            goto done;
        }
        Py_CLEAR(out);
        if (PyErr_Occurred())
            goto done;
    }
    total = write_records(&sc, s, first, n, max_line, short_keys, NULL, PY_SSIZE_T_MAX);
    if (total < 0)
        goto done;
    out = PyBytes_FromStringAndSize(NULL, total);
    if (out != NULL)
        write_records(&sc, s, first, n, max_line, short_keys, PyBytes_AS_STRING(out), total);
done:
    PyBuffer_Release(&body);
    if (PyErr_Occurred())
        Py_CLEAR(out);
    return out;
}

/* ---- select_groups: the groups one product token selects, built in one pass. ---- */


typedef struct {
    long kind;
    Py_ssize_t vstart, vend, line;
    Py_ssize_t block_start, block_end; /* records: the agents of their block, [start, end) */
} Row;

typedef struct {
    unsigned char names_token, names_star;
} Agent;

/* One growable array of rows and one of agents: the group being read. */
typedef struct {
    Row *rows;
    Py_ssize_t nrows, rows_cap;
    Agent *agents;
    Py_ssize_t nagents, agents_cap;
    int names_token, names_star;
} GroupBuf;

static int
grow(void **items, Py_ssize_t *cap, Py_ssize_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    Py_ssize_t cap2 = *cap ? *cap * 2 : 16;
    while (cap2 < need)
        cap2 *= 2;
    void *more = PyMem_Realloc(*items, (size_t)cap2 * size);
    if (more == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = more;
    *cap = cap2;
    return 0;
}

static int
is_token_char(Py_UCS4 c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-';
}

/* (patterns, codes, special, records) of the group in buf, as the parser keeps a
 * group (see parser.Group); a record is (kind, value, line, names_token,
 * names_star): whether its block's user-agent lines name the token, "*". */
static PyObject *
group_tuple(PyObject *text, const Scanner *sc, const GroupBuf *buf)
{
    PyObject *patterns = PyList_New(0), *records = PyList_New(0), *codes = NULL, *special = NULL, *result = NULL;
    unsigned int *code_buf = NULL, *special_buf = NULL;
    Py_ssize_t ncodes = 0, nspecial = 0;
    if (patterns == NULL || records == NULL)
        goto done;
    code_buf = PyMem_Malloc((size_t)(buf->nrows + 1) * sizeof(unsigned int));
    special_buf = PyMem_Malloc((size_t)(buf->nrows + 1) * sizeof(unsigned int));
    if (code_buf == NULL || special_buf == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r < buf->nrows; r++) {
        const Row *row = &buf->rows[r];
        long kind = row->kind;
        PyObject *value = PyUnicode_Substring(text, row->vstart, row->vend);
        if (value == NULL)
            goto done;
        if (kind == K_ALLOW || kind == K_DISALLOW || kind == K_ALLOW + K_SPECIAL || kind == K_DISALLOW + K_SPECIAL) {
            if (kind >= K_SPECIAL)
                special_buf[nspecial++] = (unsigned int)PyList_GET_SIZE(patterns);
            code_buf[ncodes++] = (unsigned int)(row->line << 1 | ((kind & 7) == K_ALLOW));
            int failed = PyList_Append(patterns, value);
            Py_DECREF(value);
            if (failed < 0)
                goto done;
            continue;
        }
        int names_token = 0, names_star = 0;
        for (Py_ssize_t a = row->block_start; a < row->block_end; a++) {
            names_token |= buf->agents[a].names_token;
            names_star |= buf->agents[a].names_star;
        }
        PyObject *record = Py_BuildValue("(lNnOO)", kind, value, row->line, names_token ? Py_True : Py_False,
                                         names_star ? Py_True : Py_False);
        if (record == NULL || PyList_Append(records, record) < 0) {
            Py_XDECREF(record);
            goto done;
        }
        Py_DECREF(record);
    }
    (void)sc;
    codes = PyBytes_FromStringAndSize((const char *)code_buf, ncodes * (Py_ssize_t)sizeof(unsigned int));
    special = PyBytes_FromStringAndSize((const char *)special_buf, nspecial * (Py_ssize_t)sizeof(unsigned int));
    if (codes != NULL && special != NULL)
        result = PyTuple_Pack(4, patterns, codes, special, records);
done:
    PyMem_Free(code_buf);
    PyMem_Free(special_buf);
    Py_XDECREF(patterns);
    Py_XDECREF(records);
    Py_XDECREF(codes);
    Py_XDECREF(special);
    return result;
}

/* Ends the group in buf: appended to the token's and/or the star's list (stars
 * NULL: a group naming "*" only is counted, not built). */
static int
end_group(PyObject *text, const Scanner *sc, GroupBuf *buf, PyObject *mine, PyObject *stars, int *star_seen)
{
    *star_seen |= buf->names_star;
    if (buf->names_token || (buf->names_star && stars != NULL)) {
        PyObject *group = group_tuple(text, sc, buf);
        if (group == NULL)
            return -1;
        int failed = (buf->names_token && PyList_Append(mine, group) < 0)
                     || (buf->names_star && stars != NULL && PyList_Append(stars, group) < 0);
        Py_DECREF(group);
        if (failed)
            return -1;
    }
    buf->nrows = buf->nagents = 0;
    buf->names_token = buf->names_star = 0;
    return 0;
}

/* select_groups(text, keys, token[, star]) -> (key, groups): the groups whose
 * user-agent lines name ``token`` (lower-case), else those naming "*", as in
 * parser.select (the reference); key is the token, "*", or "" when no group
 * applies. Only the selected groups become Python objects; with star false, the
 * groups of "*" are not built (key "*" comes with no groups). */
static PyObject *
select_groups(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *text, *keys, *token_obj;
    int want_star = 1, star_seen = 0;
    Scanner sc;
    if (!PyArg_ParseTuple(args, "UO!U|p:select_groups", &text, &PyList_Type, &keys, &token_obj, &want_star)
        || scanner_init(&sc, text, keys) < 0)
        return NULL;
    const char *token = NULL;
    Py_ssize_t token_n = 0;
    if (PyUnicode_IS_ASCII(token_obj) && PyUnicode_GET_LENGTH(token_obj) > 0) {
        token = (const char *)PyUnicode_1BYTE_DATA(token_obj);
        token_n = PyUnicode_GET_LENGTH(token_obj);
    }
    GroupBuf buf = {0};
    PyObject *mine = PyList_New(0), *stars = PyList_New(0), *result = NULL;
    if (mine == NULL || stars == NULL)
        goto done;
    PyObject *star_list = want_star ? stars : NULL;
    int in_group = 0, in_agents = 0, after_record = 0;
    Py_ssize_t block = 0, start = 0, lineno = 0;
    while (start < sc.n) {
        Py_ssize_t end = line_end(&sc, start), vstart = 0, vend = 0;
        lineno++;
        long kind = line_record(&sc, start, end, &vstart, &vend);
        start = end + 1;
        if (kind < 0 || kind == K_SITEMAP || kind == K_HOST)
            continue;
        if (kind == K_USER_AGENT) {
            if (!in_group || !in_agents) {
                if (in_group && end_group(text, &sc, &buf, mine, star_list, &star_seen) < 0)
                    goto done;
                in_group = in_agents = 1;
                block = 0;
                after_record = 0;
            }
            else if (after_record) {
                block = buf.nagents;
                after_record = 0;
            }
            Agent agent = {0, 0};
            Py_ssize_t length = vend - vstart;
            if (length > 0 && AT(&sc, vstart) == '*'
                && (length == 1 || AT(&sc, vstart + 1) == ' ' || AT(&sc, vstart + 1) == '\t'))
                agent.names_star = 1;
            else {
                Py_ssize_t t = 0;
                while (t < length && is_token_char(AT(&sc, vstart + t)))
                    t++;
                if (t == 0)
                    continue; /* names no token: not one of the group's agents */
                if (t == token_n) {
                    Py_ssize_t i = 0;
                    for (; i < t; i++) {
                        Py_UCS4 c = AT(&sc, vstart + i);
                        if (c >= 'A' && c <= 'Z')
                            c += 32;
                        if (c != (Py_UCS4)(unsigned char)token[i])
                            break;
                    }
                    agent.names_token = i == t;
                }
            }
            if (grow((void **)&buf.agents, &buf.agents_cap, buf.nagents + 1, sizeof(Agent)) < 0)
                goto done;
            buf.agents[buf.nagents++] = agent;
            buf.names_token |= agent.names_token;
            buf.names_star |= agent.names_star;
            continue;
        }
        if (!in_group)
            continue;
        int rule = (kind & 7) == K_ALLOW || (kind & 7) == K_DISALLOW;
        if (rule) {
            in_agents = 0;
            if (vend == vstart)
                continue;
        }
        else
            after_record = 1;
        if (!buf.names_token && !(buf.names_star && want_star) && !in_agents)
            continue; /* a group nobody asked for: its agents are all known */
        if (grow((void **)&buf.rows, &buf.rows_cap, buf.nrows + 1, sizeof(Row)) < 0)
            goto done;
        Row row = {kind, vstart, vend, lineno, block, buf.nagents};
        buf.rows[buf.nrows++] = row;
    }
    if (in_group && end_group(text, &sc, &buf, mine, star_list, &star_seen) < 0)
        goto done;
    PyObject *key = PyList_GET_SIZE(mine) > 0 ? token_obj : NULL, *given = key != NULL || !star_seen ? mine : stars;
    if (key == NULL && (key = PyUnicode_FromString(star_seen ? "*" : "")) == NULL)
        goto done;
    else if (key == token_obj)
        Py_INCREF(key);
    result = PyTuple_Pack(2, key, given);
    Py_DECREF(key);
done:
    PyMem_Free(buf.rows);
    PyMem_Free(buf.agents);
    Py_XDECREF(mine);
    Py_XDECREF(stars);
    return result;
}

#undef AT

/* ---- first_question(body, max_line, keys, short_keys, token) -> (key, groups, records):
 * a file's first question, from its bytes as fetched, in one call: the body
 * reduced to its records (reduce_octets, all of it), read as text (surrogate
 * escapes, a final newline, as parser.decode), the groups the token selects
 * (select_groups, "*"'s included) and the records text without their rules
 * (records_text, the groups' codes omitted), as octets. The steps are the functions
 * themselves: no Python runs between them (after other work has left the CPU's
 * caches cold, each step through Python costs a small file's first question
 * more than the step itself). */
static PyObject *newline_text = NULL; /* "\n", made once */

static PyObject *
first_question(PyObject *module, PyObject *args)
{
    PyObject *body, *keys, *short_keys, *token, *result = NULL;
    PyObject *reduced = NULL, *decoded = NULL, *text = NULL, *selected = NULL, *omit = NULL, *records = NULL;
    PyObject *call = NULL;
    Py_ssize_t max_line;
    if (!PyArg_ParseTuple(args, "SnO!O!U:first_question", &body, &max_line, &PyList_Type, &keys, &PyTuple_Type,
                          &short_keys, &token))
        return NULL;
    call = Py_BuildValue("(OnnOO)", body, PyBytes_GET_SIZE(body), max_line, keys, short_keys);
    reduced = call == NULL ? NULL : reduce_octets(module, call);
    Py_CLEAR(call);
    if (reduced == NULL)
        goto done;
    if (newline_text == NULL && (newline_text = PyUnicode_FromString("\n")) == NULL)
        goto done;
    decoded = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(reduced), PyBytes_GET_SIZE(reduced), "surrogateescape");
    if (decoded == NULL || (text = PyUnicode_Concat(decoded, newline_text)) == NULL)
        goto done;
    call = PyTuple_Pack(4, text, keys, token, Py_True);
    selected = call == NULL ? NULL : select_groups(module, call);
    Py_CLEAR(call);
    if (selected == NULL)
        goto done;
    /* the codes of the groups given, joined when there are several */
    PyObject *groups = PyTuple_GET_ITEM(selected, 1);
    if (PyList_GET_SIZE(groups) == 1) {
        omit = PyTuple_GET_ITEM(PyList_GET_ITEM(groups, 0), 1);
        Py_INCREF(omit);
    }
    else {
        Py_ssize_t total = 0;
        for (Py_ssize_t g = 0; g < PyList_GET_SIZE(groups); g++)
            total += PyBytes_GET_SIZE(PyTuple_GET_ITEM(PyList_GET_ITEM(groups, g), 1));
        if ((omit = PyBytes_FromStringAndSize(NULL, total)) == NULL)
            goto done;
        char *at = PyBytes_AS_STRING(omit);
        for (Py_ssize_t g = 0; g < PyList_GET_SIZE(groups); g++) {
            PyObject *codes = PyTuple_GET_ITEM(PyList_GET_ITEM(groups, g), 1);
            memcpy(at, PyBytes_AS_STRING(codes), (size_t)PyBytes_GET_SIZE(codes));
            at += PyBytes_GET_SIZE(codes);
        }
    }
    call = PyTuple_Pack(4, text, keys, short_keys, omit);
    PyObject *written = call == NULL ? NULL : records_text(module, call);
    Py_CLEAR(call);
    /* as octets: what the file keeps */
    records = written == NULL ? NULL : PyUnicode_AsEncodedString(written, "utf-8", "surrogateescape");
    Py_XDECREF(written);
    if (records != NULL)
        result = PyTuple_Pack(3, PyTuple_GET_ITEM(selected, 0), groups, records);
done:
    Py_XDECREF(reduced);
    Py_XDECREF(decoded);
    Py_XDECREF(text);
    Py_XDECREF(selected);
    Py_XDECREF(omit);
    Py_XDECREF(records);
    return result;
}

/* ---- the verdict ledger's records (ledger.py) -----------------------------------
 * write_record(fd, previous, head, url, fingerprint, when) -> (chain hash, size):
 * writes the line head + JSON(url) + ',"fp":"' + hex(fingerprint) + '","t":' +
 * format(when, ".3f") + ',"p":"' + hex(previous[:8]) + '"}' and its line break to fd
 * (a short write completed), and gives SHA-256(previous + line) and the bytes
 * written. JSON(url) is json.encoder's ASCII form; hashlib's SHA-256 hashes.
 */
static PyObject *sha256_fn = NULL, *json_ascii_fn = NULL;

static int
ledger_imports(void)
{
    if (sha256_fn != NULL)
        return 0;
    PyObject *hashlib = PyImport_ImportModule("hashlib");
    PyObject *encoder = hashlib == NULL ? NULL : PyImport_ImportModule("json.encoder");
    PyObject *sha = encoder == NULL ? NULL : PyObject_GetAttrString(hashlib, "sha256");
    PyObject *ascii = sha == NULL ? NULL : PyObject_GetAttrString(encoder, "encode_basestring_ascii");
    Py_XDECREF(hashlib);
    Py_XDECREF(encoder);
    if (ascii == NULL) {
        Py_XDECREF(sha);
        return -1;
    }
    json_ascii_fn = ascii;
    sha256_fn = sha;
    return 0;
}

static const char hex_digits[] = "0123456789abcdef";

static char *
put_hex(char *out, const unsigned char *data, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        *out++ = hex_digits[data[i] >> 4];
        *out++ = hex_digits[data[i] & 15];
    }
    return out;
}

static PyObject *
write_record(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "write_record(fd, previous, head, url, fingerprint, when)");
        return NULL;
    }
    long fd_value = PyLong_AsLong(args[0]);
    if (fd_value == -1 && PyErr_Occurred())
        return NULL;
    if (fd_value < 0 || fd_value > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "write_record: a file descriptor is a non-negative int");
        return NULL;
    }
    int fd = (int)fd_value;
    PyObject *previous = args[1], *head = args[2], *url = args[3], *fingerprint = args[4];
    if (!PyBytes_Check(previous) || !PyUnicode_Check(head) || !PyUnicode_Check(url) || !PyBytes_Check(fingerprint)) {
        PyErr_SetString(PyExc_TypeError, "write_record(fd: int, previous: bytes, head: str, url: str, "
                                         "fingerprint: bytes, when: float)");
        return NULL;
    }
    double when = PyFloat_AsDouble(args[5]);
    if (when == -1.0 && PyErr_Occurred())
        return NULL;
    if (ledger_imports() < 0)
        return NULL;
    Py_ssize_t head_n, url_n, prev_n = PyBytes_GET_SIZE(previous), fp_n = PyBytes_GET_SIZE(fingerprint);
    const char *head_s = PyUnicode_AsUTF8AndSize(head, &head_n);
    if (head_s == NULL)
        return NULL;
    /* The URL as JSON: quoted as it is when it is printable ASCII without '"' or '\\' (the common case). */
    PyObject *quoted = NULL;
    const char *url_s = NULL;
    int plain = PyUnicode_IS_ASCII(url);
    if (plain) {
        url_s = (const char *)PyUnicode_1BYTE_DATA(url);
        url_n = PyUnicode_GET_LENGTH(url);
        for (Py_ssize_t i = 0; i < url_n; i++) {
            unsigned char c = (unsigned char)url_s[i];
            if (c < ' ' || c > '~' || c == '"' || c == '\\') {
                plain = 0;
                break;
            }
        }
    }
    if (!plain) {
        quoted = PyObject_CallOneArg(json_ascii_fn, url);
        if (quoted == NULL)
            return NULL;
        url_s = PyUnicode_AsUTF8AndSize(quoted, &url_n);
        if (url_s == NULL) {
            Py_DECREF(quoted);
            return NULL;
        }
    }
    char *when_s = PyOS_double_to_string(when, 'f', 3, 0, NULL);
    if (when_s == NULL) {
        Py_XDECREF(quoted);
        return NULL;
    }
    Py_ssize_t when_n = (Py_ssize_t)strlen(when_s), link_n = prev_n < 8 ? prev_n : 8;
    /* previous, then the line and its line break: the first part is hashed, the rest written */
    Py_ssize_t line_n = head_n + url_n + (plain ? 2 : 0) + 7 + 2 * fp_n + 6 + when_n + 6 + 2 * link_n + 2;
    PyObject *buffer = PyBytes_FromStringAndSize(NULL, prev_n + line_n + 1);
    if (buffer == NULL) {
        PyMem_Free(when_s);
        Py_XDECREF(quoted);
        return NULL;
    }
    char *start = PyBytes_AS_STRING(buffer), *out = start;
    memcpy(out, PyBytes_AS_STRING(previous), (size_t)prev_n);
    out += prev_n;
    char *line = out;
    memcpy(out, head_s, (size_t)head_n);
    out += head_n;
    if (plain)
        *out++ = '"';
    memcpy(out, url_s, (size_t)url_n);
    out += url_n;
    if (plain)
        *out++ = '"';
    memcpy(out, ",\"fp\":\"", 7);
    out += 7;
    out = put_hex(out, (const unsigned char *)PyBytes_AS_STRING(fingerprint), fp_n);
    memcpy(out, "\",\"t\":", 6);
    out += 6;
    memcpy(out, when_s, (size_t)when_n);
    out += when_n;
    memcpy(out, ",\"p\":\"", 6);
    out += 6;
    out = put_hex(out, (const unsigned char *)PyBytes_AS_STRING(previous), link_n);
    *out++ = '"';
    *out++ = '}';
    *out = '\n';
    PyMem_Free(when_s);
    Py_XDECREF(quoted);
    /* written first, then hashed (the hash is kept by the caller only once the line is written) */
    const char *data = line;
    Py_ssize_t left = line_n + 1;
    while (left > 0) {
        Py_ssize_t done = RFC_WRITE(fd, data, left);
        if (done < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0) {
                    Py_DECREF(buffer);
                    return NULL;
                }
                continue;
            }
            Py_DECREF(buffer);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        if (done == 0) {
            Py_DECREF(buffer);
            errno = EIO;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        data += done;
        left -= done;
    }
    PyObject *view = PyMemoryView_FromMemory(start, prev_n + line_n, PyBUF_READ);
    PyObject *hashed = view == NULL ? NULL : PyObject_CallOneArg(sha256_fn, view);
    Py_XDECREF(view);
    PyObject *digest = hashed == NULL ? NULL : PyObject_CallMethod(hashed, "digest", NULL);
    Py_XDECREF(hashed);
    Py_DECREF(buffer);
    if (digest == NULL)
        return NULL;
    return Py_BuildValue("(Nn)", digest, line_n + 1);
}

static PyMethodDef speedups_methods[] = {
    {"scan_lines", scan_lines, METH_VARARGS, "The known records of a robots.txt text: [(kind, value, line)]."},
    {"select_groups", select_groups, METH_VARARGS, "The groups a product token selects: (key, groups)."},
    {"records_text", records_text, METH_VARARGS, "A robots.txt text reduced to its known records."},
    {"reduce_octets", reduce_octets, METH_VARARGS, "A robots.txt body reduced to its known records, as octets."},
    {"first_question", first_question, METH_VARARGS,
     "A file's first question from its bytes: (key, groups, records without their rules)."},
    {"configure", configure, METH_VARARGS, "configure(path_of, rule_type): what every matcher calls."},
    {"write_record", (PyCFunction)(void (*)(void))write_record, METH_FASTCALL,
     "write_record(fd, previous, head, url, fingerprint, when) -> (chain hash, size): a ledger record written."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups = {
    PyModuleDef_HEAD_INIT, "_speedups", "C accelerator of scrapy_rfc9309's parser and matcher.", -1,
    speedups_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (PyType_Ready(&FastMatcherType) < 0)
        return NULL;
    octet_class['*'] = STAR;
    octet_class['$'] = DOLLAR;
    octet_class['%'] = PERCENT;
    /* A secret hash base for this process: a base in [2, 2^61 - 3]. */
    PyObject *os = PyImport_ImportModule("os");
    if (os == NULL)
        return NULL;
    PyObject *random = PyObject_CallMethod(os, "urandom", "i", 8);
    Py_DECREF(os);
    if (random == NULL)
        return NULL;
    uint64_t seed = 0;
    for (int i = 0; i < 8; i++)
        seed = seed << 8 | (unsigned char)PyBytes_AS_STRING(random)[i];
    Py_DECREF(random);
    hash_base = 2 + seed % (M61 - 4);
    PyObject *module = PyModule_Create(&speedups);
    if (module == NULL)
        return NULL;
    Py_INCREF(&FastMatcherType);
    if (PyModule_AddObject(module, "FastMatcher", (PyObject *)&FastMatcherType) < 0) {
        Py_DECREF(&FastMatcherType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
