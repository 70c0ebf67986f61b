package config_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crl-go/crl/config"
	"github.com/crl-go/crl/core"
)

type deadlockErr struct{}

func (deadlockErr) Error() string         { return "deadlock" }
func (deadlockErr) SQLErrorNumber() int32 { return 1205 }

func TestRetryBreakerKey(t *testing.T) {
	c, _, err := config.ParseDSN("sqlserver", "sqlserver://h?retryBreaker=failures=2,open=5s")
	if err != nil {
		t.Fatal(err)
	}
	if c.Breaker != (core.BreakerSettings{Failures: 2, OpenFor: 5 * time.Second}) {
		t.Errorf("Breaker = %+v", c.Breaker)
	}
	for _, bad := range []string{"failures=0", "failures=x", "open=5s", "failures=2,open=-1", "failures=2,color=red", "failures=2,failures=3"} {
		_, _, err := config.ParseDSN("sqlserver", "sqlserver://h?retryBreaker="+bad)
		if err == nil || !strings.Contains(err.Error(), "retryBreaker") {
			t.Errorf("retryBreaker=%s: %v", bad, err)
		}
	}
	rt, _, err := config.New("sqlserver", "sqlserver://h?retryExec={1205:0}&retryBreaker=failures=2", config.WithPropertiesFile(""))
	if err != nil {
		t.Fatal(err)
	}
	r := rt.Retrier()
	for i := 0; i < 2; i++ {
		_ = r.Do(context.Background(), "x", func(context.Context) error { return deadlockErr{} })
	}
	if r.Breaker() == nil {
		t.Fatal("no breaker")
	}
	// {1205:0} never retries, so 1205 is not a retryable failure: closed.
	if r.Breaker().Open() {
		t.Error("a rule with count 0 must not open the breaker")
	}
	rt, _, err = config.New("sqlserver", "sqlserver://h?retryExec={1205:1,0}&retryBreaker=failures=2")
	if err != nil {
		t.Fatal(err)
	}
	r = rt.Retrier()
	for i := 0; i < 2; i++ {
		_ = r.Do(context.Background(), "x", func(context.Context) error { return deadlockErr{} })
	}
	if err := r.Do(context.Background(), "x", func(context.Context) error { return nil }); !errors.Is(err, core.ErrCircuitOpen) {
		t.Errorf("err = %v, want ErrCircuitOpen", err)
	}
}
