package wire

// MaxCacheMarkers is the provider's limit on cache_control markers in one request
// (Anthropic: "A maximum of 4 blocks with cache_control may be provided").
const MaxCacheMarkers = 4

// MaxBodyBytes is the largest request body the Messages API accepts: 32 MB.
const MaxBodyBytes = 32_000_000
