module github.com/crl-go/crl/benchmarks

go 1.26.0

replace github.com/crl-go/crl => ../

require (
	github.com/avast/retry-go/v4 v4.7.0
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/crl-go/crl v0.0.0-00010101000000-000000000000
)
