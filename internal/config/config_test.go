package config

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

// parse reads args (and the flag defaults) into a Config the way the CLI does.
func parse(t *testing.T, args ...string) Config {
	t.Helper()
	var c Config
	p, err := kong.New(&c, kong.Name("keyward"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c
}

// DefaultLimits is what the flags default to, so configurations built in
// code (tests, the in-process load test) match a plain `keyward serve`.
func TestDefaultLimitsMatchFlagDefaults(t *testing.T) {
	if got, want := parse(t).Limits, DefaultLimits(); got != want {
		t.Fatalf("flag defaults %+v\nDefaultLimits  %+v", got, want)
	}
}

func TestDefaultsValidate(t *testing.T) {
	c := parse(t)
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// Every out-of-range limit is refused with an error naming its flag.
func TestValidateLimits(t *testing.T) {
	cases := []struct {
		flag string
		set  func(*Limits)
	}{
		{"--account-bcrypt-cost", func(l *Limits) { l.AccountBcryptCost = 3 }},
		{"--account-bcrypt-cost", func(l *Limits) { l.AccountBcryptCost = 16 }},
		{"--lockout-failures", func(l *Limits) { l.LockoutFailures = -1 }},
		{"--lockout-ip-failures", func(l *Limits) { l.LockoutIPFailures = -1 }},
		{"--lockout-window", func(l *Limits) { l.LockoutWindow = 0 }},
		{"--lockout-duration", func(l *Limits) { l.LockoutDuration = time.Millisecond }},
		{"--secret-regen-limit", func(l *Limits) { l.SecretRegenLimit = -1 }},
		{"--rate-limit", func(l *Limits) { l.RateLimit = -1 }},
		{"--rate-limit", func(l *Limits) { l.RateBurst = 0 }},
		{"--admin-rate-limit", func(l *Limits) { l.AdminRateBurst = 0 }},
		{"--heartbeat-rate-limit", func(l *Limits) { l.HeartbeatRateLimit = -5 }},
	}
	for _, tc := range cases {
		c := parse(t)
		tc.set(&c.Limits)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s out of range: Validate() = %v, want an error naming it", tc.flag, err)
		}
	}
	// Zero rates switch a limiter off; their bursts are then irrelevant.
	c := parse(t, "--rate-limit", "0", "--rate-burst", "0", "--lockout-failures", "0", "--secret-regen-limit", "0")
	if err := c.Validate(); err != nil {
		t.Fatalf("limiters off: %v", err)
	}
}

// --shutdown-timeout defaults to 30s, is read from its flag or environment
// variable, and must be 0 (the default) to 1h.
func TestShutdownTimeout(t *testing.T) {
	if c := parse(t); c.ShutdownTimeout != 30*time.Second || c.StopTimeout() != 30*time.Second {
		t.Errorf("default --shutdown-timeout = %s (StopTimeout %s), want 30s", c.ShutdownTimeout, c.StopTimeout())
	}
	if c := parse(t, "--shutdown-timeout", "2s"); c.ShutdownTimeout != 2*time.Second || c.Validate() != nil {
		t.Errorf("--shutdown-timeout 2s: %s, %v", c.ShutdownTimeout, c.Validate())
	}
	t.Setenv("KEYWARD_SHUTDOWN_TIMEOUT", "45s")
	if c := parse(t); c.ShutdownTimeout != 45*time.Second {
		t.Errorf("KEYWARD_SHUTDOWN_TIMEOUT=45s: %s", c.ShutdownTimeout)
	}
	if c := (Config{}); c.StopTimeout() != DefaultShutdownTimeout {
		t.Errorf("a zero ShutdownTimeout stops within %s, want %s", c.StopTimeout(), DefaultShutdownTimeout)
	}
	for _, bad := range []time.Duration{-time.Second, 2 * time.Hour} {
		c := parse(t)
		c.ShutdownTimeout = bad
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--shutdown-timeout") {
			t.Errorf("--shutdown-timeout %s: Validate() = %v, want an error naming it", bad, err)
		}
	}
}

// A bare port is refused with a hint naming both readings (this machine
// only, every interface); any other malformed address names the form.
func TestValidateAddrHints(t *testing.T) {
	cases := []struct {
		set  func(*Config)
		want []string
	}{
		{func(c *Config) { c.Addr = "8081" }, []string{`--addr (KEYWARD_ADDR) "8081" is a port without a host`, "did you mean --addr 127.0.0.1:8081", "or --addr :8081"}},
		{func(c *Config) { c.HTTPAddr = "80" }, []string{"did you mean --http-addr 127.0.0.1:80", "--http-addr :80"}},
		{func(c *Config) { c.MetricsAddr = "9090" }, []string{"did you mean --metrics-addr 127.0.0.1:9090"}},
		{func(c *Config) { c.Addr = "localhost" }, []string{`--addr (KEYWARD_ADDR) "localhost"`, "missing port", "HOST:PORT"}},
	}
	for _, tc := range cases {
		c := parse(t)
		tc.set(&c)
		err := c.Validate()
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %v, want it to contain %q", err, w)
			}
		}
	}
	for _, ok := range []string{":8081", "127.0.0.1:8081", "[::1]:8081", "0.0.0.0:0"} {
		c := parse(t, "--addr", ok)
		if err := c.Validate(); err != nil {
			t.Errorf("--addr %s: %v", ok, err)
		}
	}
}
