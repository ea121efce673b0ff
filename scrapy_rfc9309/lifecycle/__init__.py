"""The life of an origin's documents in a crawl: fetching them, their states (cache, store,
single fetch), the requests waiting for them, parking, and the idle watch."""
