package tiktoken

import "testing"

// CountReference exports the reference count (tiktoken-go's, on the whole text) to the corpus
// tests and benchmarks of package tiktoken_test, and TestEncodings both encodings, built once
// per test binary.
var (
	CountReference func(*Encoding, testing.TB, string) int = (*Encoding).countReference
	TestEncodings  func(testing.TB) []*Encoding            = testEncodings
)
