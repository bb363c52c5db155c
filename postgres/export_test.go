package postgres

import "context"

// BoundarySQL is the query a load from the cut finds a session's latest boundaries with.
const BoundarySQL = boundarySQL

// CutHead is where a load from the cut would start reading session: the line of the kept head
// of its latest boundary, 0 for a whole load.
var CutHead = func(s *Store, session string) (int64, error) { return cutHead(context.Background(), s.pool, session) }
