package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrInvalidValue reports a setting whose value is malformed or out of
	// its range. The error also unwraps to the cause, such as a
	// *core.RuleError for a rule.
	ErrInvalidValue = errors.New("config: invalid value")

	// ErrUnknownKey reports a key of the properties file that is not a
	// setting (a typo such as retryExce= would otherwise be ignored).
	ErrUnknownKey = errors.New("config: unknown key")

	// ErrDuplicateKey reports a setting given twice in one DSN, or a
	// single-valued setting given twice in one properties file.
	ErrDuplicateKey = errors.New("config: duplicate key")

	// ErrRestartRequired reports an edit of the properties file that
	// changes a key read only at start (retryBudget, retryBreaker,
	// executionCutoff): the reload applied the other keys, and that one
	// takes effect at the next start.
	ErrRestartRequired = errors.New("config: restart to apply")

	// ErrMalformed reports a DSN or a properties line whose shape is
	// wrong: an unterminated brace or quote, text after a closing brace.
	ErrMalformed = errors.New("config: malformed")
)

// ValueError reports a setting whose value is not valid. It names where the
// value came from, the key and the value, and says what was expected. It
// matches ErrInvalidValue with errors.Is, and unwraps to its cause too.
type ValueError struct {
	Source string // "DSN", "option", or "" (a properties file names itself in a FileError)
	Key    string // the key's canonical name, such as connectRetryCount
	Value  string // the value as written
	Reason string // what is wrong and what was expected
	Err    error  // the cause, such as a *core.RuleError; may be nil
}

// Error implements error:
// config: DSN: connectRetryCount="300": expected a whole number from 0 to 255.
func (e *ValueError) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	b.WriteString(e.Key)
	b.WriteByte('=')
	b.WriteString(strconv.Quote(e.Value))
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns ErrInvalidValue and the cause.
func (e *ValueError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidValue, e.Err}
	}
	return []error{ErrInvalidValue}
}

// FileError reports a line of a properties file that cannot be used, or a
// file that cannot be read (Line 0).
type FileError struct {
	Path string // the file
	Line int    // the offending line, 1-based; 0 when the file as a whole is at fault
	Err  error  // what is wrong with it
}

// Error implements error: config: /etc/crl/mssql-jdbc.properties:3: ….
func (e *FileError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "config: ")
	if e.Line > 0 {
		return "config: " + e.Path + ":" + strconv.Itoa(e.Line) + ": " + msg
	}
	return "config: " + e.Path + ": " + msg
}

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// dsnError reports a shape error of a DSN.
type dsnError struct {
	reason string
	err    error
}

func (e *dsnError) Error() string { return "config: DSN: " + e.reason }

func (e *dsnError) Unwrap() error { return e.err }

// reasonError is what is wrong with a value, wrapped by a ValueError that
// names the key: a reason ("" means the setting's want) and maybe a cause.
type reasonError struct {
	reason string
	cause  error
}

func (e *reasonError) Error() string { return e.reason }

func errorf(format string, args ...any) error {
	return &reasonError{reason: fmt.Sprintf(format, args...)}
}
