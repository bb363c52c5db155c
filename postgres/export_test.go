package postgres

// BoundarySQL is the query a load from the cut finds a session's latest boundaries with.
const BoundarySQL = boundarySQL
