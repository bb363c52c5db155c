package memo

import "unsafe"

// The memos estimate the bytes they hold from the lengths and capacities of their slices and
// maps, without walking them: a slice costs its capacity in elements, a map about twice its
// entries' keys and values (Go's maps keep groups of eight slots filled to between 7/16 and
// 7/8, plus a control byte a slot). Strings and blocks the memos hold by identity are the
// caller's records' and count for nothing.

// SliceBytes estimates a slice of capacity n of elements like e.
func SliceBytes[T any](n int, e T) int64 { return int64(n) * int64(unsafe.Sizeof(e)) }

// MapBytes estimates a map of n entries with keys like k and values like v.
func MapBytes[K comparable, V any](n int, k K, v V) int64 {
	return int64(n) * (2*int64(unsafe.Sizeof(k)+unsafe.Sizeof(v)) + 2)
}

// Stats returns what m holds: its entries, size bytes an entry, and the entries it has
// dropped.
func (m *Gen[K, V]) Stats(size int64) Stats {
	var k K
	var v V
	return Stats{Entries: m.Len(), Bytes: MapBytes(m.Len(), k, v) + int64(m.Len())*size, Evictions: int64(m.evictions)}
}
