package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/crl-go/crl/core"
)

// ErrForeignPool is what an adapter tells the observer of a handle built
// over a pool crl did not open: retries live in crl's driver layer, which
// that pool's connections do not run, so nothing on it is retried. The
// event is a core.RulesReloaded with no Path whose Err wraps it (see
// ForeignPool).
var ErrForeignPool = errors.New("config: the pool was not opened by crl, so nothing on it is retried; " +
	"open it with crl.OpenDB to retry its statements")

// ErrForeignPoolSettings is the error of settings given explicitly for a
// pool crl did not open: nothing there applies them, so they are refused
// rather than silently ignored. Only an observer is accepted there (see
// ForeignPool).
var ErrForeignPoolSettings = errors.New("config: settings given for a pool crl did not open, where nothing is retried; " +
	"open the pool with crl.OpenDB (or the adapter's Open or OpenDB) to apply them")

// ForeignPool is what an adapter does with opts, the options given for a
// pool crl did not open, which pool names in messages (such as "the
// mysql pool (*sql.DB)"); name is the adapter's package, which starts
// them. An option whose value is invalid is reported as NewRuntime
// reports it. Options that set anything but an observer (rules, budget,
// breaker, timeouts, clock, family, …) are refused: the error wraps
// ErrForeignPoolSettings and names them. Otherwise, when opts name an
// observer (WithObserver), ForeignPool tells it, once, that nothing on
// the pool is retried: a core.RulesReloaded with no Path (no properties
// file is involved) and an Err wrapping ErrForeignPool that names pool.
// An adapter calls it once per handle it builds, so an observer hears of
// each such handle once, at construction, and never per statement.
func ForeignPool(name, pool string, opts ...Option) error {
	c := NewConfig(opts...)
	if _, err := c.Policy(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var keys []string
	for i := range settings {
		if settings[i].key != nameObserver && c.has(i) {
			keys = append(keys, settings[i].key)
		}
	}
	if c.DriverFamily != "" {
		keys = append(keys, nameDriverFamily)
	}
	if len(keys) > 0 {
		return fmt.Errorf("%s: %s given for %s: %w", name, strings.Join(keys, ", "), pool, ErrForeignPoolSettings)
	}
	if c.Observer != nil {
		c.Observer.RulesReloaded(core.RulesReloaded{Err: fmt.Errorf("%s: %s: %w", name, pool, ErrForeignPool)})
	}
	return nil
}
