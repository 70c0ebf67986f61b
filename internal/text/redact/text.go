package redact

import (
	"strings"

	"github.com/crl-go/crl/internal/text/dsnlex"
)

// Text returns s, free text such as a driver's error message, with the
// secrets of every DSN it quotes masked: each URL in it (from its scheme
// to the next white space) as DSN reads a URL, and every key that names a
// secret elsewhere. It returns s itself when it hides nothing.
func Text(s string) string {
	var (
		b    strings.Builder
		from int // the part of s not yet written
	)
	dsnlex.URLs(s, func(start, end int) {
		b.WriteString(In(s[from:start], FormKeyValue))
		b.WriteString(In(s[start:end], FormURL))
		from = end
	})
	b.WriteString(In(s[from:], FormKeyValue))
	if out := b.String(); out != s {
		return out
	}
	return s
}

// Error returns err when its text holds no secret (Text changes nothing),
// else an error whose text is err's with the secrets masked and that
// unwraps to err, so that errors.Is and errors.As still find what err
// holds. A driver's error about a DSN it cannot read (a *url.Error, pgx's
// *pgconn.ParseConfigError) quotes the DSN, password included.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if masked := Text(msg); masked != msg {
		return &maskedError{msg: masked, err: err}
	}
	return err
}

// maskedError is an error whose text had its secrets masked.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }
