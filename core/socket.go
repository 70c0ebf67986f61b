package core

// IsSocketError reports whether n is one of the Windows socket error
// numbers that ErrorNumber gives a network failure (10053, 10054, 10060,
// 10061): the client heard no answer from the server, so the outcome of
// what it sent is unknown.
func IsSocketError(n int32) bool {
	switch n {
	case wsaConnAborted, wsaConnReset, wsaTimedOut, wsaConnRefused:
		return true
	}
	return false
}
