package config

import "github.com/crl-go/crl/internal/text/redact"

// MaskSecrets returns err when its text quotes no secret, else an error
// whose text is err's with the password (and every other secret) of each
// DSN it quotes masked, and that unwraps to err (errors.Is and errors.As
// still find what err holds). It is for a module that hands a DSN to its
// driver's own parser, whose error may quote it whole (pgx's about a URL
// net/url cannot read): pgxcrl.Open. Errors of this package are masked
// already.
func MaskSecrets(err error) error { return redact.Error(err) }
