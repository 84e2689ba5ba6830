// Package kwtest boots real keyward servers for tests: a real listener on
// 127.0.0.1:0, a real database (SQLite in a temp dir, or a fresh PostgreSQL
// database when KEYWARD_TEST_DATABASE_URL is set), an injectable clock, and
// clients that speak the real wire protocol (envelopes included).
package kwtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/seal"
	"github.com/keyward/keyward/internal/server"
)

// Clock is a settable clock for servers under test.
type Clock struct {
	mu   sync.Mutex
	t    time.Time
	real bool          // RealClock: the wall clock shifted by off
	off  time.Duration // RealClock's shift
}

// NewClock returns a clock at a fixed, realistic instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)} }

// RealClock returns a clock that runs with the wall clock, for benchmarks
// that time what the server does (a test never does); Advance and Set
// shift it.
func RealClock() *Clock { return &Clock{real: true} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real {
		return time.Now().Add(c.off)
	}
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t, c.off = c.t.Add(d), c.off+d
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real {
		c.off = time.Until(t)
		return
	}
	c.t = t
}

// Engines returns the engines to test on: sqlite always, postgres when
// KEYWARD_TEST_DATABASE_URL is set.
func Engines() []string {
	if os.Getenv("KEYWARD_TEST_DATABASE_URL") != "" {
		return []string{"sqlite", "postgres"}
	}
	return []string{"sqlite"}
}

// ForEachEngine runs fn as a subtest per engine. Without
// KEYWARD_TEST_DATABASE_URL the postgres subtest is skipped, with
// NoPostgres as the reason, so that the half that did not run shows in the
// output (scripts/test counts these skips).
func ForEachEngine(t *testing.T, fn func(t *testing.T, engine string)) {
	for _, e := range Engines() {
		t.Run(e, func(t *testing.T) { fn(t, e) })
	}
	if len(Engines()) == 1 {
		t.Run("postgres", func(t *testing.T) { t.Skip(NoPostgres) })
	}
}

// NoPostgres is the reason a test gives for skipping its PostgreSQL half.
const NoPostgres = "KEYWARD_TEST_DATABASE_URL is not set"

// PostgresURL creates a fresh, empty PostgreSQL database for this test on the
// server of KEYWARD_TEST_DATABASE_URL and drops it when the test ends.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return postgresDB(t, "")
}

// MigratedPostgresURL is PostgresURL with every migration applied: an
// empty database from a pool of copies of a template database migrated
// once (named after store.MigrationsDigest and shared by test processes;
// see pgpool.go), which is much faster than migrating, or even copying, a
// database for each test. The database is the test's until it ends.
func MigratedPostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("KEYWARD_TEST_DATABASE_URL")
	if base == "" {
		t.Fatal("KEYWARD_TEST_DATABASE_URL is not set")
	}
	tpl, err := migratedTemplate(base)
	if err != nil {
		t.Fatalf("migrated template database: %v", err)
	}
	return pooledDB(t, base, tpl)
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// postgresDB creates a database for this test, a copy of tpl when not "",
// and drops it when the test ends.
func postgresDB(t testing.TB, tpl string) string {
	base := os.Getenv("KEYWARD_TEST_DATABASE_URL")
	if base == "" {
		t.Fatal("KEYWARD_TEST_DATABASE_URL is not set")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	name := randomName("kw_")
	if err := createFrom(admin, name, tpl); err != nil {
		admin.Close()
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Options adjust a test server.
type Options struct {
	Engine      string // "sqlite" (default) or "postgres"
	DatabaseURL string // share an existing database (several servers, one PostgreSQL)
	DataDir     string // share an existing SQLite data directory
	Clock       *Clock // default NewClock()
	Configure   func(*config.Config)
	FlushEvery  time.Duration
	ReapEvery   time.Duration
	// DispatchEvery is the webhook dispatcher's interval. By default it is
	// an hour and events do not wake the dispatcher, so tests deliver by
	// calling Dispatcher.Run themselves; set, events wake it as in production.
	DispatchEvery time.Duration
	// Log receives the server's log (default: discarded).
	Log *slog.Logger
}

// Webhooks are the webhook settings of test servers: the defaults, with
// loopback allowed so a receiver on 127.0.0.1 can be reached (the SSRF
// tests clear it).
var Webhooks = config.Webhooks{WebhookAllowNetworks: "127.0.0.0/8,::1/128", WebhookRetries: "1m,5m,30m,2h,6h",
	WebhookTimeout: 5 * time.Second, WebhookConcurrency: 8}

// Limits are the abuse limits of test servers: the defaults, with the
// cheapest bcrypt cost and the per-IP request limiters off (every test
// client is 127.0.0.1; the limiter tests turn them on).
var Limits = func() config.Limits {
	l := config.DefaultLimits()
	l.AccountBcryptCost = 4
	l.RateLimit, l.AdminRateLimit, l.HeartbeatRateLimit = 0, 0, 0
	return l
}()

// SecretKeys is the keyring of the secret key every test server uses unless
// its test sets SecretKeyFile (see WriteSecretKey).
var SecretKeys = func() *seal.Keyring {
	kr, err := seal.New([]byte("keyward test secret key 32 bytes"))
	if err != nil {
		panic(err)
	}
	return kr
}()

// WriteSecretKey writes the test secret key file at path unless a file is
// there.
func WriteSecretKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return seal.Write(path, SecretKeys)
}

// AdminPassword is the password of the "admin" user every test server has.
const AdminPassword = "correct horse battery staple"

// Server is a running keyward under test.
type Server struct {
	*server.Server
	T     testing.TB
	URL   string
	Clock *Clock
	// DatabaseURL is the PostgreSQL database (empty on SQLite); DataDir the data directory.
	DatabaseURL string
	DataDir     string
	token       string
}

// Start boots a server and stops it when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Clock == nil {
		o.Clock = NewClock()
	}
	cfg := config.Config{
		// synchronous=NORMAL: what a power cut would lose no test can
		// observe, and FULL's fsync per commit adds up over a suite of
		// mostly sequential writes. The store's own tests (group commit,
		// SIGKILL mid-batch) run with the default, FULL.
		Database:       config.Database{Data: o.DataDir, DatabaseURL: o.DatabaseURL, SQLiteSynchronous: "normal"},
		Addr:           "127.0.0.1:0",
		SessionTimeout: 180 * time.Second,
		// As keyward serve's default: every test's heartbeats go
		// through the session cache, on either engine.
		SessionCache:  1_000_000,
		BcryptCost:    4,
		Limits:        Limits,
		Webhooks:      Webhooks,
		TokenTTL:      12 * time.Hour,
		AdminUsername: "admin",
		AdminPassword: AdminPassword,
	}
	fresh := ""
	if cfg.Data == "" {
		cfg.Data = t.TempDir()
		fresh = cfg.Data
	}
	if o.Engine == "postgres" && cfg.DatabaseURL == "" {
		cfg.DatabaseURL = MigratedPostgresURL(t)
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	if cfg.Data == fresh && cfg.DatabaseURL == "" && !cfg.NoMigrate {
		// A copy of a migrated database (see sqlitetpl.go).
		if err := seedSQLite(cfg.Data); err != nil {
			t.Fatalf("SQLite template: %v", err)
		}
	}
	if cfg.SecretKeyFile == "" {
		// Every test server gets the same secret key, so servers sharing a
		// database (several processes) open each other's secrets; a test
		// of a generated key file sets SecretKeyFile itself.
		if err := WriteSecretKey(cfg.SecretKeyPath()); err != nil {
			t.Fatalf("secret key file: %v", err)
		}
	}
	ctx := context.Background()
	manual := o.DispatchEvery <= 0
	if manual {
		o.DispatchEvery = time.Hour
	}
	srv, err := server.New(ctx, cfg, server.Options{Now: o.Clock.Now, Log: o.Log, FlushEvery: o.FlushEvery, ReapEvery: o.ReapEvery,
		DispatchEvery: o.DispatchEvery, ManualDispatch: manual})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("server.Start: %v", err)
	}
	t.Cleanup(func() {
		// Connections the shared client opened but never used would hold
		// Shutdown for its 5 s new-connection grace.
		HTTP.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	scheme := "http://"
	if cfg.TLS() {
		scheme = "https://"
	}
	return &Server{Server: srv, T: t, URL: scheme + strings.Replace(srv.Addr(), "[::]", "127.0.0.1", 1), Clock: o.Clock,
		DatabaseURL: cfg.DatabaseURL, DataDir: cfg.Data}
}

// RawDB opens a plain database/sql handle on the database of a data
// directory (SQLite) or of databaseURL when it is set (PostgreSQL), closed
// when the test ends: for tests that look at or change rows behind the
// server's back.
func RawDB(t testing.TB, dataDir, databaseURL string) *sql.DB {
	t.Helper()
	driver, dsn := "sqlite", "file:"+filepath.Join(dataDir, "keyward.db")+"?_pragma=busy_timeout(10000)"
	if databaseURL != "" {
		driver, dsn = "pgx", databaseURL
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// RawDB opens a plain database/sql handle on s's database (see RawDB).
func (s *Server) RawDB(t testing.TB) *sql.DB { return RawDB(t, s.DataDir, s.DatabaseURL) }

// SeeOtherProcesses brings the server's session cache up to date with
// writes another process made (a keyward import keys run beside it, a
// second server), as it does on its own a moment later, so a test sees
// them without waiting: on SQLite it looks at the database file's version
// now (it does so at most a second apart), on PostgreSQL it waits until its
// listener has heard every change committed before the call.
func (s *Server) SeeOtherProcesses() {
	s.T.Helper()
	if err := s.DB.CheckForeignWrites(context.Background()); err != nil {
		s.T.Fatalf("CheckForeignWrites: %v", err)
	}
}
