/* Optional C accelerator for the matcher's hot path (see matcher.py).
 *
 * A FastMatcher compiles one merged group's rules from the rules as parsed, in a
 * single pass: the literal rules (canonical text -> deciding rule) as a sorted
 * array searched by bisection, or for a large group as a hash table probed once
 * per distinct key length (building it costs no sort); the wildcard rules sorted
 * by priority. Patterns with "%" escapes or non-ASCII text are brought to their
 * canonical form by a Python callback. It keeps its own copy of the rules' text
 * and no Python object of them. Calling it with an absolute URL whose path
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
#define KEY_MAX_LENGTH (((Py_ssize_t)1 << 30) - 1)
typedef struct {
    const char *s;
    int32_t rule;
    unsigned int n : 30;       /* at most KEY_MAX_LENGTH */
    unsigned int allow : 1;
    unsigned int special : 1; /* written with "$", "%" or non-ASCII (loses ties to a plain one) */
} Key;

/* While a matcher is built: a wildcard rule. */
typedef struct {
    Py_ssize_t priority;
    Py_ssize_t npieces;
    Str *pieces;
    int32_t rule;
    unsigned char allow;
    unsigned char anchored;
} Wild;

/* A built matcher's wildcard rule, 16 octets: its pieces are the texts first ..
 * first + npieces - 1 after the keys'. */
typedef struct {
    uint32_t priority;
    uint32_t flags; /* rule << 2 | allow << 1 | anchored */
    uint32_t first;
    uint32_t npieces;
} Glob;

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
} Build;

/* A matcher keeps everything in one allocation, the object itself (a broad crawl
 * keeps many): 8 octets a literal rule (its text's offset, its rule), 16 a
 * wildcard rule and 4 a piece, the hash table of a large group, and the text of
 * every key and piece, copied (it keeps no Python object of the rules). The text
 * of key k is text[offs[k]:offs[k + 1]], that of piece p text[offs[nkeys + p]:
 * offs[nkeys + p + 1]]. */
typedef struct {
    PyObject_VAR_HEAD
    vectorcallfunc vectorcall;
    uint32_t nkeys;
    uint32_t nwild;
    const uint32_t *offs;     /* [nkeys + npieces + 1] */
    const uint32_t *key_rule; /* [nkeys]: rule << 1 | allow */
    const Glob *wild;         /* [nwild], by priority */
    const int32_t *slots;     /* the hash table (indices of keys, -1 when free); NULL: keys are sorted */
    const unsigned char *has_len; /* hash table only: [maxlen + 1], whether some key has that length */
    const char *text;
    uint32_t maxlen;
    int shift; /* slot of a hash: (hash * GOLDEN) >> shift */
    PyObject *path_of; /* url -> canonical path, for the URLs decoded in Python */
} FastMatcher;

#define KEY_TEXT(self, k) ((self)->text + (self)->offs[k])
#define KEY_LEN(self, k) ((Py_ssize_t)((self)->offs[(k) + 1] - (self)->offs[k]))

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
bisect_last(const FastMatcher *self, const char *text, Py_ssize_t n)
{
    Py_ssize_t lo = 0, hi = self->nkeys;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (compare(text, n, KEY_TEXT(self, mid), KEY_LEN(self, mid)) < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo - 1;
}

/* The index of the longest key that prefixes the path, or -1. */
HOT_INLINE Py_ssize_t
longest_sorted(const FastMatcher *self, const char *path, Py_ssize_t n)
{
    Py_ssize_t index = bisect_last(self, path, n);
    while (index >= 0) {
        const char *s = KEY_TEXT(self, index);
        Py_ssize_t kn = KEY_LEN(self, index);
        if (kn <= n && memcmp(s, path, (size_t)kn) == 0)
            return index;
        Py_ssize_t common = 0, limit = kn < n ? kn : n;
        while (common < limit && s[common] == path[common])
            common++;
        index = bisect_last(self, path, common);
    }
    return -1;
}

static inline size_t
slot_of(int shift, uint64_t h)
{
    return (size_t)((h * GOLDEN) >> shift);
}

static Py_ssize_t
probe(const FastMatcher *self, uint64_t h, const char *text, Py_ssize_t n)
{
    size_t mask = ((size_t)1 << (64 - self->shift)) - 1;
    for (size_t slot = slot_of(self->shift, h);; slot = (slot + 1) & mask) {
        int32_t index = self->slots[slot];
        if (index < 0)
            return -1;
        if (KEY_LEN(self, index) == n && memcmp(KEY_TEXT(self, index), text, (size_t)n) == 0)
            return index;
    }
}

/* The longest key that prefixes the path (-1: none): one pass over the path, one
 * probe per length that some key has (large groups only: kept out of the hot path). */
COLD Py_ssize_t
longest_hashed(const FastMatcher *self, const char *path, Py_ssize_t n)
{
    Py_ssize_t found = -1, key;
    Py_ssize_t limit = n < (Py_ssize_t)self->maxlen ? n : (Py_ssize_t)self->maxlen;
    uint64_t h = 0; /* the hash of path[:base] */
    for (Py_ssize_t base = 0;; base += 8) {
        if (self->has_len[base] && (key = probe(self, h, path, base)) >= 0)
            found = key;
        Py_ssize_t rest = limit - base;
        if (rest <= 0)
            return found;
        uint64_t word = rest >= 8 ? load_word(path + base) : load_part(path + base, rest);
        for (Py_ssize_t part = 1; part < 8 && part <= rest; part++)
            if (self->has_len[base + part]
                && (key = probe(self, hash_word(h, word & ((1ULL << (8 * part)) - 1)), path, base + part)) >= 0)
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
glob(const FastMatcher *self, const char *path, Py_ssize_t n, const Glob *w)
{
    const uint32_t *offs = self->offs + self->nkeys + w->first;
    const char *text = self->text;
    Str first = {text + offs[0], (Py_ssize_t)(offs[1] - offs[0])};
    if (first.n > n || memcmp(first.s, path, (size_t)first.n) != 0)
        return 0;
    Py_ssize_t last = (Py_ssize_t)w->npieces - 1;
    int anchored = w->flags & 1;
    if (last == 0)
        return !anchored || n == first.n;
    Py_ssize_t pos = first.n;
    for (Py_ssize_t i = 1; i < last; i++) {
        Str piece = {text + offs[i], (Py_ssize_t)(offs[i + 1] - offs[i])};
        pos = find(path, n, pos, piece);
        if (pos < 0)
            return 0;
        pos += piece.n;
    }
    Str tail = {text + offs[last], (Py_ssize_t)(offs[last + 1] - offs[last])};
    if (anchored)
        return n - tail.n >= pos && memcmp(path + n - tail.n, tail.s, (size_t)tail.n) == 0;
    return find(path, n, pos, tail) >= 0;
}

/* The deciding rule for a canonical path (-1: none), and whether it allows. */
HOT_INLINE Py_ssize_t
decide(const FastMatcher *self, const char *path, Py_ssize_t n, int *allow_out)
{
    Py_ssize_t best = -1, best_priority = -1;
    int allow = 1;
    Py_ssize_t key = self->slots ? longest_hashed(self, path, n) : longest_sorted(self, path, n);
    if (key >= 0) {
        best = (Py_ssize_t)(self->key_rule[key] >> 1);
        best_priority = KEY_LEN(self, key);
        allow = self->key_rule[key] & 1;
    }
    for (uint32_t k = 0; k < self->nwild; k++) {
        const Glob *w = &self->wild[k];
        int w_allow = (w->flags >> 1) & 1;
        if ((Py_ssize_t)w->priority < best_priority
            || ((Py_ssize_t)w->priority == best_priority && (allow || !w_allow)))
            break;
        if (glob(self, path, n, w)) {
            *allow_out = w_allow;
            return (Py_ssize_t)(w->flags >> 2);
        }
    }
    *allow_out = allow;
    return best;
}

COLD Py_ssize_t
decide_call(const FastMatcher *self, const char *path, Py_ssize_t n, int *allow)
{
    return decide(self, path, n, allow);
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

static PyObject *
decide_in_python(FastMatcher *self, PyObject *url)
{
    PyObject *path = PyObject_CallOneArg(self->path_of, url);
    if (path == NULL)
        return NULL;
    const char *s;
    Py_ssize_t n;
    int allow = 1;
    if (canonical_arg(path, &s, &n) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    if (!(n == 11 && memcmp(s, "/robots.txt", 11) == 0))
        decide_call(self, s, n, &allow);
    Py_DECREF(path);
    return PyBool_FromLong(allow);
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
            return decide_in_python(self, url);
        }
    }
    /* scheme "://" authority, then the path must start with "/" */
    Py_ssize_t i = 0;
    if (n == 0 || !((u[0] | 32) >= 'a' && (u[0] | 32) <= 'z'))
        return decide_in_python(self, url);
    for (i = 1; i < n; i++) {
        char c = u[i];
        if (!(((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-'))
            break;
    }
    if (i + 3 > n || u[i] != ':' || u[i + 1] != '/' || u[i + 2] != '/')
        return decide_in_python(self, url);
    for (i += 3; i < n; i++) {
        char c = u[i];
        if (c == '/' || c == '?' || c == ';' || c == '#')
            break;
    }
    if (i >= n || u[i] != '/')
        return decide_in_python(self, url);
    const char *path = u + i;
    Py_ssize_t plen = n - i;
    const char *hash = memchr(path, '#', (size_t)plen);
    if (hash)
        plen = hash - path;
    char stack[2048], *heap = NULL;
    if (!ascii || memchr(path, '%', (size_t)plen)) {
        char *buf = stack;
        if (plen * 3 > (Py_ssize_t)sizeof(stack)) {
            heap = PyMem_Malloc((size_t)plen * 3);
            if (heap == NULL)
                return PyErr_NoMemory();
            buf = heap;
        }
        plen = canonical_path_c(path, plen, buf);
        path = buf;
    }
    int allow = 1;
    if (!(plen == 11 && memcmp(path, "/robots.txt", 11) == 0))
        decide(self, path, plen, &allow);
    PyMem_Free(heap);
    return PyBool_FromLong(allow);
}

static PyObject *
fast_best(FastMatcher *self, PyObject *path)
{
    const char *s;
    Py_ssize_t n;
    int allow;
    if (canonical_arg(path, &s, &n) < 0)
        return NULL;
    return PyLong_FromSsize_t(decide_call(self, s, n, &allow));
}

static void
fast_dealloc(FastMatcher *self)
{
    Py_XDECREF(self->path_of);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static void
build_free(Build *b)
{
    PyMem_Free(b->keys);
    PyMem_Free(b->slots);
    PyMem_Free(b->has_len);
    PyMem_Free(b->wild);
    PyMem_Free(b->pieces);
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
                if (better(&key, same))
                    *same = key;
                break;
            }
        }
    }
    b->nkeys = count;
    return 0;
}

/* Sort the keys by text, the better rule first among equal texts, and keep that one. */
static void
build_sorted(Build *b, Py_ssize_t nkeys)
{
    qsort(b->keys, (size_t)nkeys, sizeof(Key), key_order);
    Py_ssize_t count = 0;
    for (Py_ssize_t k = 0; k < nkeys; k++) {
        Key *key = &b->keys[k];
        if (count && key->n == b->keys[count - 1].n && memcmp(key->s, b->keys[count - 1].s, (size_t)key->n) == 0)
            continue;
        b->keys[count++] = *key;
    }
    b->nkeys = count;
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

/* The matcher of what was built: one object holding the tables and a copy of the
 * text (see FastMatcher). */
static FastMatcher *
pack(PyTypeObject *type, const Build *b, PyObject *path_of)
{
    size_t text_size = 0;
    for (Py_ssize_t k = 0; k < b->nkeys; k++)
        text_size += (size_t)b->keys[k].n;
    for (Py_ssize_t p = 0; p < b->npieces; p++)
        text_size += (size_t)b->pieces[p].n;
    size_t nslots = b->slots ? (size_t)1 << (64 - b->shift) : 0;
    size_t noffs = (size_t)(b->nkeys + b->npieces + 1);
    if (text_size > UINT32_MAX || noffs > UINT32_MAX || b->maxlen > (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "rules too large for FastMatcher");
        return NULL;
    }
    /* The tables of 4-octet items first, then the lengths and the text. */
    size_t size = (noffs + (size_t)b->nkeys + 4 * (size_t)b->nwild + nslots) * sizeof(uint32_t)
                  + (b->has_len ? (size_t)b->maxlen + 1 : 0) + text_size;
    FastMatcher *self = (FastMatcher *)type->tp_alloc(type, (Py_ssize_t)size);
    if (self == NULL)
        return NULL;
    char *at = (char *)self + type->tp_basicsize;
    uint32_t *offs = (uint32_t *)at, *key_rule = offs + noffs;
    Glob *wild = (Glob *)(key_rule + b->nkeys);
    int32_t *slots = (int32_t *)(wild + b->nwild);
    unsigned char *has_len = (unsigned char *)(slots + nslots);
    char *text = (char *)has_len + (b->has_len ? (size_t)b->maxlen + 1 : 0), *end = text;
    for (Py_ssize_t k = 0; k < b->nkeys; k++) {
        offs[k] = (uint32_t)(end - text);
        key_rule[k] = (uint32_t)b->keys[k].rule << 1 | b->keys[k].allow;
        memcpy(end, b->keys[k].s, (size_t)b->keys[k].n);
        end += b->keys[k].n;
    }
    for (Py_ssize_t p = 0; p < b->npieces; p++) {
        offs[b->nkeys + p] = (uint32_t)(end - text);
        memcpy(end, b->pieces[p].s, (size_t)b->pieces[p].n);
        end += b->pieces[p].n;
    }
    offs[noffs - 1] = (uint32_t)(end - text);
    for (Py_ssize_t w = 0; w < b->nwild; w++) {
        const Wild *from = &b->wild[w];
        wild[w].priority = (uint32_t)from->priority;
        wild[w].flags = (uint32_t)from->rule << 2 | (uint32_t)from->allow << 1 | from->anchored;
        wild[w].first = (uint32_t)(from->pieces - b->pieces);
        wild[w].npieces = (uint32_t)from->npieces;
    }
    if (b->slots) {
        memcpy(slots, b->slots, nslots * sizeof(int32_t));
        memcpy(has_len, b->has_len, (size_t)b->maxlen + 1);
    }
    self->vectorcall = fast_vectorcall;
    self->nkeys = (uint32_t)b->nkeys;
    self->nwild = (uint32_t)b->nwild;
    self->offs = offs;
    self->key_rule = key_rule;
    self->wild = wild;
    self->slots = b->slots ? slots : NULL;
    self->has_len = b->slots ? has_len : NULL;
    self->text = text;
    self->maxlen = (uint32_t)b->maxlen;
    self->shift = b->shift;
    Py_INCREF(path_of);
    self->path_of = path_of;
    return self;
}

/* What a pattern's octets hold. */
enum { STAR = 1, DOLLAR = 2, PERCENT = 4 };
static unsigned char octet_class[256];

enum { LITERAL, WILDCARD, CANONICAL, SKIP };

/* FastMatcher(patterns: list[str], codes: array("I") (line << 1 | allow), canon,
 *             path_of, hash_above: int)
 *
 * ``canon(pattern)`` is called for a pattern with "%" or non-ASCII text only: it
 * returns the canonical key of a literal rule (str; empty: no rule), or
 * ``(priority, pieces: list[str], anchored)`` for a wildcard rule. ``path_of(url)``
 * gives the canonical path of a URL that is not decoded here. The literal keys
 * are hashed when there are more than ``hash_above``, else sorted. */
static PyObject *
fast_new(PyTypeObject *type, PyObject *args, PyObject *Py_UNUSED(kwds))
{
    PyObject *patterns_arg, *codes_arg, *canon, *path_of;
    Py_ssize_t hash_above;
    if (!PyArg_ParseTuple(args, "OOOOn:FastMatcher", &patterns_arg, &codes_arg, &canon, &path_of, &hash_above))
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
    if (view.itemsize != (Py_ssize_t)sizeof(unsigned int) || view.format == NULL || strcmp(view.format, "I") != 0
        || view.len / view.itemsize != count || count >= ((Py_ssize_t)1 << 30)) {
        PyErr_SetString(PyExc_ValueError, "one code (array of \"I\") per pattern");
        goto fail;
    }
    const unsigned int *codes = view.buf;
    kinds = PyMem_Malloc((size_t)(count ? count : 1));
    bd->keys = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(Key));
    if (!kinds || !bd->keys) {
        PyErr_NoMemory();
        goto fail;
    }
    /* One look at each pattern: a plain literal becomes a key at once; the others
     * are counted, and those with "%" or non-ASCII text put in canonical form. */
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
            Key *key = &bd->keys[nkeys++];
            key->s = s;
            key->n = (unsigned int)n;
            key->rule = (int32_t)i;
            key->allow = codes[i] & 1;
            key->special = (found & DOLLAR) != 0 ? 1 : 0;
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
        PyObject *form = PyObject_CallOneArg(canon, pattern);
        if (form == NULL)
            goto fail;
        forms[i] = form;
        kinds[i] = CANONICAL;
        if (PyUnicode_Check(form)) {
            Str text;
            if (ascii_str(form, &text) < 0)
                goto fail;
            if (text.n == 0) {
                kinds[i] = SKIP;
                continue;
            }
            if (text.n > KEY_MAX_LENGTH) {
                PyErr_SetString(PyExc_ValueError, "a pattern too long for FastMatcher");
                goto fail;
            }
            Key *key = &bd->keys[nkeys++];
            key->s = text.s;
            key->n = (unsigned int)text.n;
            key->rule = (int32_t)i;
            key->allow = codes[i] & 1;
            key->special = 1;
        }
        else if (PyTuple_Check(form) && PyTuple_GET_SIZE(form) == 3 && PyList_Check(PyTuple_GET_ITEM(form, 1))
                 && PyList_GET_SIZE(PyTuple_GET_ITEM(form, 1)) > 0) {
            nwild++;
            npieces += PyList_GET_SIZE(PyTuple_GET_ITEM(form, 1));
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
        wild->rule = (int32_t)i;
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
    else
        build_sorted(bd, nkeys);
    self = pack(type, bd, path_of);
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
    {"best", (PyCFunction)fast_best, METH_O,
     "best(canonical_path) -> the index of the deciding rule, or -1 when no rule matches."},
    {"best_index", (PyCFunction)fast_best, METH_O, "best_index(canonical_path) -> the same as best()."},
    {NULL, NULL, 0, NULL},
};

/* A matcher is its group's matcher as robotstxt.py uses one (the Matcher of
 * matcher.py): ``allowed`` is the matcher itself, and it keeps no rule's text
 * (``has_patterns``), so that a group needs no Python object around it. */
static PyObject *
fast_allowed(PyObject *self, void *Py_UNUSED(closure))
{
    Py_INCREF(self);
    return self;
}

static PyObject *
fast_has_patterns(PyObject *Py_UNUSED(self), void *Py_UNUSED(closure))
{
    Py_RETURN_FALSE;
}

static PyGetSetDef fast_getset[] = {
    {"allowed", fast_allowed, NULL, "The matcher itself: allowed(url) decides a URL.", NULL},
    {"has_patterns", fast_has_patterns, NULL, "False: the matcher keeps no rule's text.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FastMatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "scrapy_rfc9309._speedups.FastMatcher",
    .tp_basicsize = sizeof(FastMatcher),
    .tp_itemsize = 1,
    .tp_dealloc = (destructor)fast_dealloc,
    .tp_vectorcall_offset = offsetof(FastMatcher, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "One merged group's rules, decided in C.",
    .tp_methods = fast_methods,
    .tp_getset = fast_getset,
    .tp_new = fast_new,
};

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
} Scanner;

static int
scanner_init(Scanner *sc, PyObject *text, PyObject *keys)
{
    if (!PyList_Check(keys)) {
        PyErr_SetString(PyExc_TypeError, "keys must be a list");
        return -1;
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
    }
    sc->ukind = PyUnicode_KIND(text);
    sc->data = PyUnicode_DATA(text);
    sc->n = PyUnicode_GET_LENGTH(text);
    return 0;
}

#define AT(sc, i) PyUnicode_READ((sc)->ukind, (sc)->data, (i))

/* The record written on the line [start, end): its kind (an allow or disallow
 * pattern that is not a plain literal gets 8 added), and its value's bounds; -1
 * when the line holds no known record. */
static long
line_record(const Scanner *sc, Py_ssize_t start, Py_ssize_t end, Py_ssize_t *value_start, Py_ssize_t *value_end)
{
    Py_ssize_t p = start;
    while (p < end && is_ws(AT(sc, p)))
        p++;
    if (p >= end)
        return -1;
    Py_UCS4 first = AT(sc, p);
    if (first >= 'A' && first <= 'Z')
        first += 32;
    for (Py_ssize_t k = 0; k < sc->nkeys; k++) {
        Py_ssize_t kn = sc->key_n[k], i;
        if (p + kn > end || first != (Py_UCS4)(unsigned char)sc->key_s[k][0])
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

/* ---- records_text(text, keys, short_keys) -> the text reduced to its known records:
 * each on its own line number as short_keys[kind] followed by its value, every
 * other line empty (parser.records_text, without a Python object per record). */
typedef struct {
    long kind;
    Py_ssize_t vstart, vend, line;
} Found;

static PyObject *
records_text(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *text, *keys, *short_keys, *out = NULL;
    Scanner sc;
    if (!PyArg_ParseTuple(args, "UO!O!:records_text", &text, &PyList_Type, &keys, &PyTuple_Type, &short_keys)
        || scanner_init(&sc, text, keys) < 0)
        return NULL;
    Py_ssize_t nshort = PyTuple_GET_SIZE(short_keys);
    for (Py_ssize_t k = 0; k < nshort; k++) {
        PyObject *key = PyTuple_GET_ITEM(short_keys, k);
        if (!PyUnicode_Check(key) || !PyUnicode_IS_ASCII(key)) {
            PyErr_SetString(PyExc_TypeError, "short keys are ASCII str");
            return NULL;
        }
    }
    Found *found = NULL;
    Py_ssize_t nfound = 0, cap = 0, total = 0, start = 0, lineno = 0, last = 1;
    Py_UCS4 maxchar = 127;
    while (start < sc.n) {
        Py_ssize_t end = line_end(&sc, start), vstart, vend;
        lineno++;
        long kind = line_record(&sc, start, end, &vstart, &vend);
        if (kind >= 0) {
            if (kind >= nshort) {
                PyErr_SetString(PyExc_ValueError, "a kind without a short key");
                goto done;
            }
            if (nfound == cap) {
                Py_ssize_t grown = cap ? cap * 2 : 32;
                Found *more = PyMem_Realloc(found, (size_t)grown * sizeof(Found));
                if (more == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                found = more;
                cap = grown;
            }
            found[nfound++] = (Found){kind, vstart, vend, lineno};
            total += (lineno - last) + PyUnicode_GET_LENGTH(PyTuple_GET_ITEM(short_keys, kind)) + (vend - vstart);
            if (sc.ukind != PyUnicode_1BYTE_KIND || maxchar < 255) {
                for (Py_ssize_t v = vstart; v < vend; v++) {
                    Py_UCS4 c = AT(&sc, v);
                    if (c > maxchar)
                        maxchar = c;
                }
            }
            last = lineno;
        }
        start = end + 1;
    }
    out = PyUnicode_New(total, maxchar);
    if (out == NULL)
        goto done;
    {
        int okind = PyUnicode_KIND(out);
        void *odata = PyUnicode_DATA(out);
        Py_ssize_t o = 0;
        last = 1;
        for (Py_ssize_t f = 0; f < nfound; f++) {
            for (; last < found[f].line; last++)
                PyUnicode_WRITE(okind, odata, o++, '\n');
            PyObject *key = PyTuple_GET_ITEM(short_keys, found[f].kind);
            const char *ks = (const char *)PyUnicode_1BYTE_DATA(key);
            for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(key); i++)
                PyUnicode_WRITE(okind, odata, o++, (Py_UCS4)(unsigned char)ks[i]);
            for (Py_ssize_t v = found[f].vstart; v < found[f].vend; v++)
                PyUnicode_WRITE(okind, odata, o++, AT(&sc, v));
        }
    }
done:
    PyMem_Free(found);
    return out;
}

/* ---- select_groups: the groups one product token selects, built in one pass. ---- */

enum { K_USER_AGENT = 0, K_ALLOW = 1, K_DISALLOW = 2, K_SITEMAP = 3, K_HOST = 7, K_SPECIAL = 8 };

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

/* select_groups(text, keys, token, star) -> (key, groups): the groups whose
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
    if (PyList_GET_SIZE(mine) > 0)
        result = Py_BuildValue("(OO)", token_obj, mine);
    else if (star_seen)
        result = Py_BuildValue("(sO)", "*", stars);
    else
        result = Py_BuildValue("(sO)", "", mine);
done:
    PyMem_Free(buf.rows);
    PyMem_Free(buf.agents);
    Py_XDECREF(mine);
    Py_XDECREF(stars);
    return result;
}

#undef AT

static PyMethodDef speedups_methods[] = {
    {"scan_lines", scan_lines, METH_VARARGS, "The known records of a robots.txt text: [(kind, value, line)]."},
    {"select_groups", select_groups, METH_VARARGS, "The groups a product token selects: (key, groups)."},
    {"records_text", records_text, METH_VARARGS, "A robots.txt text reduced to its known records."},
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
