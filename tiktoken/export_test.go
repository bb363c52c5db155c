package tiktoken

import "testing"

// CountReference and CountUnsplit export the reference counts (tiktoken-go's, chunk by chunk
// and in one call) to the corpus tests and benchmarks of package tiktoken_test, and
// TestEncodings both encodings, built once per test binary.
var (
	CountReference func(*Encoding, testing.TB, string) int = (*Encoding).countReference
	CountUnsplit   func(*Encoding, string) int             = (*Encoding).countUnsplit
	TestEncodings  func(testing.TB) []*Encoding            = testEncodings
)
