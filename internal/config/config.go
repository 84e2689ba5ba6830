// Package config is keyward's one typed configuration. Every field is a flag
// and an environment variable (the struct tags are read by the CLI parser);
// Validate checks combinations and names the setting at fault.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Database selects and locates the database.
type Database struct {
	Data        string `name:"data" default:"./keyward-data" env:"KEYWARD_DATA" help:"Data directory (SQLite database, certificates)."`
	DatabaseURL string `name:"database-url" env:"KEYWARD_DATABASE_URL" help:"postgres:// URL; empty uses SQLite under --data."`
	// SecretKeyFile is the key-encryption key of the secrets stored in the
	// database (app, TOTP and webhook secrets, JWT keys, stored login
	// replies). It must not be backed up with the database.
	SecretKeyFile string `name:"secret-key-file" env:"KEYWARD_SECRET_KEY_FILE" help:"Key file encrypting the secrets stored in the database; default <data>/secret.key, generated (mode 0600) when absent. Keep it out of database backups; every process sharing a database needs the same file."`
	// SQLiteSynchronous is SQLite's durability: full (a commit acknowledged
	// survives a power cut; group commit shares each fsync among the writes
	// queued meanwhile) or normal (a power cut may lose the last commits).
	SQLiteSynchronous string `name:"sqlite-synchronous" default:"full" enum:"full,normal" env:"KEYWARD_SQLITE_SYNCHRONOUS" help:"SQLite durability: full (an acknowledged write survives a power cut) or normal (a power cut may lose the last writes; a crash of keyward loses nothing)."`
}

// SecretKeyPath is SecretKeyFile, or secret.key under the data directory.
func (d Database) SecretKeyPath() string {
	if d.SecretKeyFile != "" {
		return d.SecretKeyFile
	}
	return filepath.Join(d.Data, "secret.key")
}

// Signing locates the reply-signing keys (PWF-REPLY-V1).
type Signing struct {
	SigningDir string `name:"signing-dir" env:"KEYWARD_SIGNING_DIR" help:"Directory of reply-signing keys (keyward keys signing init); default <data>/signing. No key: replies are not signed."`
}

// SigningPath is SigningDir, or the signing directory under data.
func (s Signing) SigningPath(data string) string {
	if s.SigningDir != "" {
		return s.SigningDir
	}
	return filepath.Join(data, "signing")
}

// Blobs locates the bytes of update artifacts: a directory by default, an
// S3-compatible bucket when S3Bucket is set (needed with several processes).
type Blobs struct {
	BlobDir         string `name:"blob-dir" env:"KEYWARD_BLOB_DIR" help:"Directory of update artifacts; default <data>/blobs."`
	S3Endpoint      string `name:"s3-endpoint" env:"KEYWARD_S3_ENDPOINT" help:"S3-compatible endpoint host[:port] for update artifacts."`
	S3Bucket        string `name:"s3-bucket" env:"KEYWARD_S3_BUCKET" help:"Bucket of update artifacts; setting it selects the S3 store."`
	S3Region        string `name:"s3-region" env:"KEYWARD_S3_REGION" help:"Region of the bucket."`
	S3AccessKey     string `name:"s3-access-key" env:"KEYWARD_S3_ACCESS_KEY" help:"S3 access key ID."`
	S3SecretKey     string `name:"s3-secret-key" env:"KEYWARD_S3_SECRET_KEY" help:"S3 secret access key."`
	S3Prefix        string `name:"s3-prefix" env:"KEYWARD_S3_PREFIX" help:"Key prefix inside the bucket."`
	S3Insecure      bool   `name:"s3-insecure" env:"KEYWARD_S3_INSECURE" help:"Talk plain HTTP to the S3 endpoint (private networks only)."`
	MaxArtifactSize int64  `name:"max-artifact-mb" default:"4096" env:"KEYWARD_MAX_ARTIFACT_MB" help:"Largest update artifact accepted, in MiB (0: 4096)."`
}

// Sweeps tunes the scheduled jobs.
type Sweeps struct {
	KeyExpiring string `name:"key-expiring" default:"168h,24h" env:"KEYWARD_KEY_EXPIRING" help:"Windows before a key's expiry in which key_expiring is sent, once each (empty: never)."`
}

// ExpiringWindows parses KeyExpiring.
func (w Sweeps) ExpiringWindows() ([]time.Duration, error) {
	return durations("--key-expiring (KEYWARD_KEY_EXPIRING)", w.KeyExpiring, "168h,24h")
}

// durations parses a comma-separated list of positive durations (empty
// entries skipped), naming the setting in its error.
func durations(setting, list, example string) ([]time.Duration, error) {
	var out []time.Duration
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s %q: a comma-separated list of positive durations such as %s", setting, list, example)
		}
		out = append(out, d)
	}
	return out, nil
}

// Webhooks tunes webhook delivery and keyward's other outgoing requests
// (lazy migration's upstream lookups).
type Webhooks struct {
	WebhookAllowNetworks string        `name:"webhook-allow-networks" env:"KEYWARD_WEBHOOK_ALLOW_NETWORKS" help:"Comma-separated CIDRs webhooks may reach although private or loopback (e.g. 10.0.0.0/8); empty allows public addresses only."`
	WebhookRetries       string        `name:"webhook-retries" default:"1m,5m,30m,2h,6h" env:"KEYWARD_WEBHOOK_RETRIES" help:"Waits before each retry of a failed webhook delivery (±10 % jitter)."`
	WebhookTimeout       time.Duration `name:"webhook-timeout" default:"5s" env:"KEYWARD_WEBHOOK_TIMEOUT" help:"How long a webhook receiver has to answer."`
	WebhookConcurrency   int           `name:"webhook-concurrency" default:"8" env:"KEYWARD_WEBHOOK_CONCURRENCY" help:"Webhook deliveries sent at once per process."`
	WebhookLogRetention  time.Duration `name:"webhook-log-retention" default:"720h" env:"KEYWARD_WEBHOOK_LOG_RETENTION" help:"Keep finished webhook deliveries and sent events this long (0: forever)."`
	// UpstreamTimeout bounds one request to an app's upstream (lazy
	// migration), which a client's login waits for; it goes through the
	// same address guard (WebhookAllowNetworks).
	UpstreamTimeout time.Duration `name:"upstream-timeout" default:"3s" env:"KEYWARD_UPSTREAM_TIMEOUT" help:"How long a lookup of an unknown key at an app's upstream may take (lazy migration; 0: 3s)."`
}

// AllowNetworks parses WebhookAllowNetworks.
func (w Webhooks) AllowNetworks() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(w.WebhookAllowNetworks, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			if a, aerr := netip.ParseAddr(s); aerr == nil {
				p, err = a.Prefix(a.BitLen())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("--webhook-allow-networks (KEYWARD_WEBHOOK_ALLOW_NETWORKS) %q: not a CIDR", s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Retries parses WebhookRetries; empty means the default schedule.
func (w Webhooks) Retries() ([]time.Duration, error) {
	out, err := durations("--webhook-retries (KEYWARD_WEBHOOK_RETRIES)", w.WebhookRetries, "1m,5m,30m")
	if err == nil && len(out) > 20 {
		err = errors.New("--webhook-retries: at most 20 retries")
	}
	return out, err
}

// Limits are the abuse limits: password hashing cost of app user accounts,
// sign-in lockouts (shared through the database by every process) and the
// per-IP request limiter (per process).
type Limits struct {
	AccountBcryptCost int `name:"account-bcrypt-cost" default:"10" env:"KEYWARD_ACCOUNT_BCRYPT_COST" help:"bcrypt cost for app user account passwords (4-15); every account sign-in pays it."`

	LockoutFailures   int           `name:"lockout-failures" default:"10" env:"KEYWARD_LOCKOUT_FAILURES" help:"Failed sign-ins of one username within --lockout-window that lock it (0: off)."`
	LockoutIPFailures int           `name:"lockout-ip-failures" default:"50" env:"KEYWARD_LOCKOUT_IP_FAILURES" help:"Failed sign-ins from one IP within --lockout-window that lock it (0: off)."`
	LockoutWindow     time.Duration `name:"lockout-window" default:"15m" env:"KEYWARD_LOCKOUT_WINDOW" help:"Window in which failed sign-ins are counted."`
	LockoutDuration   time.Duration `name:"lockout-duration" default:"15m" env:"KEYWARD_LOCKOUT_DURATION" help:"How long a locked username or IP stays locked."`
	SecretRegenLimit  int           `name:"secret-regen-limit" default:"5" env:"KEYWARD_SECRET_REGEN_LIMIT" help:"Secret regenerations and set-secret calls per app per hour, counted together (0: no limit)."`

	RateLimit          float64 `name:"rate-limit" default:"20" env:"KEYWARD_RATE_LIMIT" help:"Requests per second per client IP (heartbeats and signed-in admins apart); 0: off."`
	RateBurst          int     `name:"rate-burst" default:"200" env:"KEYWARD_RATE_BURST" help:"Burst of --rate-limit."`
	AdminRateLimit     float64 `name:"admin-rate-limit" default:"100" env:"KEYWARD_ADMIN_RATE_LIMIT" help:"Requests per second per IP with a valid admin token; 0: off."`
	AdminRateBurst     int     `name:"admin-rate-burst" default:"1000" env:"KEYWARD_ADMIN_RATE_BURST" help:"Burst of --admin-rate-limit."`
	HeartbeatRateLimit float64 `name:"heartbeat-rate-limit" default:"200" env:"KEYWARD_HEARTBEAT_RATE_LIMIT" help:"Heartbeats per second per client IP (6000 clients at a 30 s interval); 0: off, and no per-session budget."`
	HeartbeatRateBurst int     `name:"heartbeat-rate-burst" default:"2000" env:"KEYWARD_HEARTBEAT_RATE_BURST" help:"Burst of --heartbeat-rate-limit."`
}

// DefaultLimits are the flag defaults of Limits, for configurations built in
// code (tests, the in-process load test).
func DefaultLimits() Limits {
	return Limits{AccountBcryptCost: 10, LockoutFailures: 10, LockoutIPFailures: 50, LockoutWindow: 15 * time.Minute,
		LockoutDuration: 15 * time.Minute, SecretRegenLimit: 5, RateLimit: 20, RateBurst: 200, AdminRateLimit: 100,
		AdminRateBurst: 1000, HeartbeatRateLimit: 200, HeartbeatRateBurst: 2000}
}

// Config is everything serve needs.
type Config struct {
	Database `embed:""`
	Signing  `embed:""`

	Addr       string `name:"addr" default:"127.0.0.1:8080" env:"KEYWARD_ADDR" help:"Listen address (HTTPS when TLS is on)."`
	HTTPAddr   string `name:"http-addr" env:"KEYWARD_HTTP_ADDR" help:"Plain-HTTP listener that redirects to HTTPS when TLS is on (default :80 with --acme-domain)."`
	TLSCert    string `name:"tls-cert" env:"KEYWARD_TLS_CERT" help:"TLS certificate file (PEM)."`
	TLSKey     string `name:"tls-key" env:"KEYWARD_TLS_KEY" help:"TLS private key file (PEM)."`
	ACMEDomain string `name:"acme-domain" env:"KEYWARD_ACME_DOMAIN" help:"Obtain certificates automatically for this domain (comma-separated for several)."`
	ACMEEmail  string `name:"acme-email" env:"KEYWARD_ACME_EMAIL" help:"Contact e-mail for the ACME account."`
	TrustProxy bool   `name:"trust-proxy" env:"KEYWARD_TRUST_PROXY" help:"Honour X-Forwarded-For and X-Forwarded-Proto from a reverse proxy."`
	NoMigrate  bool   `name:"no-migrate" env:"KEYWARD_NO_MIGRATE" help:"Do not apply migrations at start; refuse to start if any are pending."`

	SessionTimeout time.Duration `name:"session-timeout" default:"180s" env:"KEYWARD_SESSION_TIMEOUT" help:"Reap sessions with no heartbeat for this long."`
	// SessionCache bounds the live sessions whose heartbeat state keyward
	// keeps in memory (store.DB.CacheSessions), on either engine. Its old
	// name, from when only SQLite had the cache, still works.
	SessionCache int           `name:"session-cache" aliases:"sqlite-session-cache" default:"1000000" env:"KEYWARD_SESSION_CACHE,KEYWARD_SQLITE_SESSION_CACHE" help:"Live sessions whose heartbeat state is kept in memory, exact under every write of every keyward process (0: every heartbeat reads the database). About 270 bytes a session."`
	BcryptCost   int           `name:"bcrypt-cost" default:"12" env:"KEYWARD_BCRYPT_COST" help:"bcrypt cost for passwords (10-15)."`
	TokenTTL     time.Duration `name:"token-ttl" default:"12h" env:"KEYWARD_TOKEN_TTL" help:"Lifetime of admin sign-in tokens."`

	ShutdownTimeout time.Duration `name:"shutdown-timeout" default:"30s" env:"KEYWARD_SHUTDOWN_TIMEOUT" help:"On stop, how long requests and background jobs under way may take to finish before they are cut (and named in the log)."`

	Limits   `embed:""`
	Blobs    `embed:""`
	Webhooks `embed:""`
	Sweeps   `embed:""`

	MetricsToken string `name:"metrics-token" env:"KEYWARD_METRICS_TOKEN" help:"Bearer token that GET /metrics asks for; empty: /metrics answers 404 on the main listener."`
	MetricsAddr  string `name:"metrics-addr" env:"KEYWARD_METRICS_ADDR" help:"Separate listener serving /metrics without a token (keep it on a private network), e.g. 127.0.0.1:9090."`

	LogFormat string `name:"log-format" default:"text" enum:"text,json" env:"KEYWARD_LOG_FORMAT" help:"Log format: text or json."`
	LogLevel  string `name:"log-level" default:"info" enum:"debug,info,warn,error" env:"KEYWARD_LOG_LEVEL" help:"Log level."`

	AdminUsername string `name:"admin-username" default:"admin" env:"KEYWARD_ADMIN_USERNAME" help:"Username of the first admin, created when none exists."`
	AdminPassword string `name:"admin-password" env:"KEYWARD_ADMIN_PASSWORD" help:"Password of the first admin; generated and printed once when empty."`
}

// checkAddr checks a listen address given as flag (or env). A bare port
// ("8081") is refused rather than read as ":8081": that would listen on
// every interface where the default listens on 127.0.0.1 only, and which
// of the two was meant is not ours to guess; the refusal names both.
func checkAddr(flag, env, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		if p, perr := strconv.Atoi(addr); perr == nil && p >= 0 && p <= 65535 {
			return fmt.Errorf("%s (%s) %q is a port without a host: did you mean %s 127.0.0.1:%s (this machine only, like the default) or %s :%s (every interface)?",
				flag, env, addr, flag, addr, flag, addr)
		}
		return fmt.Errorf("%s (%s) %q: %v (the form is HOST:PORT, e.g. 127.0.0.1:8080 or :8080)", flag, env, addr, err)
	}
	return nil
}

// TLS reports whether serve terminates TLS itself.
func (c *Config) TLS() bool { return c.TLSCert != "" || c.ACMEDomain != "" }

// Validate checks the configuration, naming the setting at fault.
func (c *Config) Validate() error {
	var errs []error
	if err := checkAddr("--addr", "KEYWARD_ADDR", c.Addr); err != nil {
		errs = append(errs, err)
	}
	if c.HTTPAddr != "" {
		if err := checkAddr("--http-addr", "KEYWARD_HTTP_ADDR", c.HTTPAddr); err != nil {
			errs = append(errs, err)
		}
	}
	if c.MetricsAddr != "" {
		if err := checkAddr("--metrics-addr", "KEYWARD_METRICS_ADDR", c.MetricsAddr); err != nil {
			errs = append(errs, err)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key (KEYWARD_TLS_CERT, KEYWARD_TLS_KEY) go together"))
	}
	if c.TLSCert != "" && c.ACMEDomain != "" {
		errs = append(errs, errors.New("--acme-domain cannot be combined with --tls-cert"))
	}
	if u := c.DatabaseURL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		errs = append(errs, errors.New("--database-url (KEYWARD_DATABASE_URL) must start with postgres:// or postgresql://"))
	}
	if c.DatabaseURL == "" && c.Data == "" {
		errs = append(errs, errors.New("--data (KEYWARD_DATA) must not be empty when no --database-url is given"))
	}
	if c.DatabaseURL != "" && c.Data == "" && c.SecretKeyFile == "" {
		errs = append(errs, errors.New("--secret-key-file (KEYWARD_SECRET_KEY_FILE) is needed when --data is empty: the secrets in the database are encrypted with it"))
	}
	if c.SessionCache < 0 {
		errs = append(errs, fmt.Errorf("--session-cache (KEYWARD_SESSION_CACHE) %d: must not be negative", c.SessionCache))
	}
	if c.SessionTimeout < 30*time.Second {
		errs = append(errs, fmt.Errorf("--session-timeout (KEYWARD_SESSION_TIMEOUT) %s: must be at least 30s", c.SessionTimeout))
	}
	if c.BcryptCost < 4 || c.BcryptCost > 15 {
		errs = append(errs, fmt.Errorf("--bcrypt-cost (KEYWARD_BCRYPT_COST) %d: must be 4 to 15", c.BcryptCost))
	}
	if c.AccountBcryptCost < 4 || c.AccountBcryptCost > 15 {
		errs = append(errs, fmt.Errorf("--account-bcrypt-cost (KEYWARD_ACCOUNT_BCRYPT_COST) %d: must be 4 to 15", c.AccountBcryptCost))
	}
	if c.LockoutFailures < 0 || c.LockoutIPFailures < 0 {
		errs = append(errs, errors.New("--lockout-failures and --lockout-ip-failures must not be negative"))
	}
	if c.LockoutWindow < time.Second || c.LockoutDuration < time.Second {
		errs = append(errs, errors.New("--lockout-window and --lockout-duration must be at least 1s"))
	}
	if c.SecretRegenLimit < 0 {
		errs = append(errs, errors.New("--secret-regen-limit must not be negative"))
	}
	for _, r := range []struct {
		name  string
		rate  float64
		burst int
	}{{"--rate-limit", c.RateLimit, c.RateBurst}, {"--admin-rate-limit", c.AdminRateLimit, c.AdminRateBurst},
		{"--heartbeat-rate-limit", c.HeartbeatRateLimit, c.HeartbeatRateBurst}} {
		if r.rate < 0 || (r.rate > 0 && r.burst < 1) {
			errs = append(errs, fmt.Errorf("%s %g with burst %d: the rate must not be negative and the burst must be at least 1", r.name, r.rate, r.burst))
		}
	}
	if c.ShutdownTimeout < 0 || c.ShutdownTimeout > time.Hour {
		errs = append(errs, fmt.Errorf("--shutdown-timeout (KEYWARD_SHUTDOWN_TIMEOUT) %s: must be 0 (the default, 30s) to 1h", c.ShutdownTimeout))
	}
	if c.TokenTTL < time.Minute {
		errs = append(errs, fmt.Errorf("--token-ttl (KEYWARD_TOKEN_TTL) %s: must be at least 1m", c.TokenTTL))
	}
	if c.MaxArtifactSize < 0 {
		errs = append(errs, fmt.Errorf("--max-artifact-mb (KEYWARD_MAX_ARTIFACT_MB) %d: must not be negative", c.MaxArtifactSize))
	}
	if _, err := c.AllowNetworks(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.ExpiringWindows(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.Retries(); err != nil {
		errs = append(errs, err)
	}
	if c.WebhookTimeout < 0 || c.WebhookConcurrency < 0 || c.WebhookLogRetention < 0 || c.UpstreamTimeout < 0 {
		errs = append(errs, errors.New("--webhook-timeout, --webhook-concurrency, --webhook-log-retention and --upstream-timeout must not be negative"))
	}
	if c.S3Bucket != "" && c.S3Endpoint == "" {
		errs = append(errs, errors.New("--s3-bucket needs --s3-endpoint (KEYWARD_S3_ENDPOINT)"))
	}
	return errors.Join(errs...)
}

// DefaultShutdownTimeout is the --shutdown-timeout of a Config built in
// code that leaves it zero.
const DefaultShutdownTimeout = 30 * time.Second

// StopTimeout is ShutdownTimeout, or DefaultShutdownTimeout when zero.
func (c *Config) StopTimeout() time.Duration {
	if c.ShutdownTimeout <= 0 {
		return DefaultShutdownTimeout
	}
	return c.ShutdownTimeout
}

// ArtifactLimit is the largest artifact upload in bytes.
func (b Blobs) ArtifactLimit() int64 {
	if b.MaxArtifactSize <= 0 {
		return 4096 << 20
	}
	return b.MaxArtifactSize << 20
}
