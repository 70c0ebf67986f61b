// Package pqtest runs crl against real PostgreSQL through lib/pq at the
// lowest version in use, in a module of its own so that crl's go.mod
// requires no lib/pq. lib/pq before v1.10.6 has no SQLState method: its
// errors carry the SQLSTATE in their Code field only.
package pqtest
