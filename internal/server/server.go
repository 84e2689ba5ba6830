// Package server wires keyward together: database, services, background jobs
// and HTTP listeners, with an ordered shutdown (HTTP, then workers, then the
// database). Tests boot the same object on 127.0.0.1:0.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/keyward/keyward/internal/abuse"
	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/analytics"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/blob"
	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/content"
	"github.com/keyward/keyward/internal/customer"
	"github.com/keyward/keyward/internal/dashboard"
	"github.com/keyward/keyward/internal/httpapi"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/lockout"
	"github.com/keyward/keyward/internal/metrics"
	"github.com/keyward/keyward/internal/outbound"
	"github.com/keyward/keyward/internal/ratelimit"
	"github.com/keyward/keyward/internal/reqid"
	"github.com/keyward/keyward/internal/reseller"
	"github.com/keyward/keyward/internal/seal"
	"github.com/keyward/keyward/internal/signing"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/internal/sweep"
	"github.com/keyward/keyward/internal/trial"
	"github.com/keyward/keyward/internal/update"
	"github.com/keyward/keyward/internal/upstream"
	"github.com/keyward/keyward/internal/webhook"
)

// Options are the parts of a server that are not configuration.
type Options struct {
	Now    func() time.Time // default time.Now
	Log    *slog.Logger     // default discards
	Stdout io.Writer        // where the generated first-admin password is printed
	// Intervals of the background jobs (tests shorten them); zero means default.
	FlushEvery time.Duration
	ReapEvery  time.Duration
	// DispatchEvery is how often webhooks are fanned out and sent (default
	// 1 s); besides, a commit that wrote events wakes the dispatcher at
	// once unless ManualDispatch is set (tests that drive Dispatcher.Run
	// themselves set it and a long interval).
	DispatchEvery  time.Duration
	ManualDispatch bool
}

// Server is a running keyward.
type Server struct {
	cfg      config.Config
	opts     Options
	DB       *store.DB
	License  *license.Service
	Accounts *account.Service
	Trials   *trial.Service
	Admins   *admin.Service
	Content  *content.Service
	Commerce *commerce.Service
	Orders   *commerce.Orders
	// Customers is the customer self-service (portal sign-in and views).
	Customers *customer.Service
	Updates   *update.Service
	Webhooks  *webhook.Service
	// Analytics answers reports; Usage counts client events for it,
	// flushed once a second (and at shutdown).
	Analytics *analytics.Service
	Usage     *analytics.Recorder
	// Dispatcher delivers webhooks; its Run is also the sweep job's.
	Dispatcher *webhook.Dispatcher
	blobs      blob.Store
	// Metrics is the server's Prometheus registry (GET /metrics).
	Metrics *metrics.Metrics
	api     *httpapi.API
	jobs    *sweep.Runner
	servers []*http.Server
	addr    net.Addr
	// metricsAddr is the --metrics-addr listener's address (nil: none).
	metricsAddr net.Addr
	// requests is the base context of every request; cutRequests cancels it
	// when a stop is forced.
	requests    context.Context
	cutRequests context.CancelFunc
	// firstAdmin is set while no admin exists: Start creates the first one
	// once every listener is bound.
	firstAdmin bool
}

// New opens the database, migrates it (or checks it with NoMigrate) and
// builds the services. When no admin exists it checks the first admin's
// configured username and password; Start creates that admin once its
// listeners are bound.
func New(ctx context.Context, cfg config.Config, opts Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	// Lines logged with a request's context carry its id.
	opts.Log = slog.New(reqid.NewHandler(opts.Log.Handler()))
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	// The key file of the secrets stored in the database: generated when
	// absent. A generated key that does not match the database (another
	// process's key on PostgreSQL, a restore without its key file) is
	// refused by SealSecrets in init, naming the key the database needs.
	if cfg.Data != "" && (cfg.DatabaseURL == "" || cfg.SecretKeyFile == "") {
		// The database or the key file lives there: a directory keyward
		// cannot use is reported as such, naming the user, before either
		// is opened. (PostgreSQL with a key file elsewhere may run with
		// no usable data directory, e.g. with S3 and a read-only disk.)
		if err := store.PrepareDataDir(cfg.Data); err != nil {
			return nil, err
		}
	}
	keyPath := cfg.SecretKeyPath()
	keys, created, err := seal.LoadOrCreate(keyPath)
	if err != nil {
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	if created {
		opts.Log.Warn("generated the secret key file: keep it out of database backups, and give every process sharing the database the same file",
			"path", keyPath, "key_id", keys.PrimaryID())
	}
	db, err := store.Open(ctx, store.Options{DataDir: cfg.Data, URL: cfg.DatabaseURL, Synchronous: cfg.SQLiteSynchronous, Keys: keys, Now: opts.Now, Log: opts.Log})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, opts: opts, DB: db}
	s.requests, s.cutRequests = context.WithCancel(context.Background())
	if err := s.init(ctx); err != nil {
		if c, ok := s.blobs.(io.Closer); ok {
			c.Close()
		}
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) init(ctx context.Context) error {
	if s.cfg.NoMigrate {
		if err := s.DB.CheckSchema(ctx); err != nil {
			return err
		}
	} else if _, err := s.DB.Migrate(ctx); err != nil {
		return err
	}
	if err := s.DB.CheckSchema(ctx); err != nil {
		return err
	}
	if n, err := s.DB.SealSecrets(ctx); err != nil {
		return err
	} else if n > 0 {
		s.opts.Log.Info("encrypted secrets stored in plaintext", "count", n)
	}
	// After every write of the start (migrations, sealing): the session
	// cache's triggers go on the tables as they now are.
	if err := s.DB.CacheSessions(ctx, s.cfg.SessionCache); err != nil {
		return err
	}
	lim := s.cfg.Limits
	guard := lockout.New(s.DB.LockoutStore(), s.opts.Now)
	signIn := lockout.Policy{MaxFailures: lim.LockoutFailures, Window: lim.LockoutWindow, Lock: lim.LockoutDuration}
	signInIP := lockout.Policy{MaxFailures: lim.LockoutIPFailures, Window: lim.LockoutWindow, Lock: lim.LockoutDuration}
	s.License = license.NewService(s.DB.LicenseStore(), s.opts.Now, rand.Reader, license.Config{SessionTimeout: s.cfg.SessionTimeout,
		Guard: guard, SecretRegen: lockout.Policy{MaxFailures: lim.SecretRegenLimit, Window: time.Hour, Lock: time.Hour}})
	s.Accounts = account.New(s.DB.AccountStore(), s.License, s.opts.Now, rand.Reader, account.Config{BcryptCost: lim.AccountBcryptCost,
		Guard: guard, SignIn: signIn, SignInIP: signInIP})
	s.Trials = trial.New(s.DB.TrialStore(), s.License, s.opts.Now, rand.Reader)
	var err error
	s.Admins, err = admin.New(ctx, s.DB.AdminStore(), s.opts.Now, admin.Config{BcryptCost: s.cfg.BcryptCost, TokenTTL: s.cfg.TokenTTL,
		Guard: guard, SignIn: signIn, SignInIP: signInIP})
	if err != nil {
		return err
	}
	if err := s.checkFirstAdmin(ctx); err != nil {
		return err
	}
	s.Content = content.New(s.DB.ContentStore(), s.opts.Now)
	s.Commerce = commerce.New(s.DB.CommerceStore(), s.opts.Now)
	s.Orders = commerce.NewOrders(s.DB.OrderStore(), s.opts.Now, rand.Reader, func(ctx context.Context, appID string) (string, error) {
		app, err := s.License.App(ctx, appID)
		if err != nil {
			return "", err
		}
		return app.Settings.KeyPrefix, nil
	})
	s.Customers, err = customer.New(ctx, s.DB.CustomerStore(), s.Accounts, s.opts.Now, customer.Config{
		Guard: guard, SignIn: signIn, SignInIP: signInIP})
	if err != nil {
		return err
	}
	if s.blobs, err = openBlobs(ctx, s.cfg); err != nil {
		return err
	}
	s.Metrics = s.newMetrics()
	s.Updates = update.NewService(s.DB.UpdateStore(), countedBlobs{s.blobs, s.Metrics}, s.opts.Now, rand.Reader, s.opts.Log)
	s.Webhooks = webhook.NewService(s.DB.WebhookStore(), s.opts.Now, rand.Reader)
	s.Analytics = analytics.NewService(s.DB.AnalyticsStore())
	s.Usage = analytics.NewRecorder(s.DB.AnalyticsStore())
	allow, _ := s.cfg.AllowNetworks() // validated
	s.Webhooks.GuardAddresses(func(ip netip.Addr) bool { return outbound.Allowed(ip, allow) })
	retries, _ := s.cfg.Retries()
	timeout := s.cfg.WebhookTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	// Lazy migration: unknown keys looked up at an app's upstream through
	// the same address guard as webhooks.
	s.License.SetUpstream(upstream.New(allow, s.cfg.UpstreamTimeout), func(ip netip.Addr) bool { return outbound.Allowed(ip, allow) },
		func(appID, outcome string, err error) {
			s.Metrics.UpstreamLookup(outcome)
			switch {
			case err != nil:
				s.opts.Log.Warn("upstream lookup failed; the key is refused as unknown", "app_id", appID, "outcome", outcome, "err", err)
			case outcome == license.UpstreamImported:
				s.opts.Log.Info("key imported from the app's upstream", "app_id", appID)
			}
		})
	s.License.OnSeatDenied(func(string) { s.Metrics.SeatDenied() })
	s.License.OnFileIssued(s.Metrics.LicenseFileIssued)
	sender := outbound.New(allow, timeout)
	if s.cfg.WebhookConcurrency > 0 { // else the dispatcher's 8, the transport's default 4
		sender.KeepIdle(s.cfg.WebhookConcurrency) // every send at once may go to one host
	}
	s.Dispatcher = webhook.NewDispatcher(s.DB.WebhookStore(), sender, s.opts.Now, rand.Reader, s.opts.Log,
		webhook.DispatchConfig{Schedule: retries, Concurrency: s.cfg.WebhookConcurrency, Timeout: timeout, OnAttempt: s.Metrics.WebhookAttempt})
	detector := abuse.New(s.DB.AbuseStore(), guard, func(ctx context.Context, appID, licenseKey, action string) error {
		var err error
		if action == license.LeakActionRotate {
			_, err = s.License.RotateForLeak(ctx, audit.System, appID, licenseKey)
		} else {
			_, err = s.License.KeyAction(ctx, audit.System, appID, licenseKey, license.ActionPause, 0, "suspected leak")
		}
		return err
	}, s.opts.Now, s.opts.Log)
	s.api = httpapi.New(httpapi.Services{License: s.License, Accounts: s.Accounts, Trials: s.Trials, Admins: s.Admins, Content: s.Content, Commerce: s.Commerce, Orders: s.Orders,
		Updates: s.Updates, Webhooks: s.Webhooks, Abuse: detector, Customers: s.Customers,
		Sellers:   reseller.New(s.DB.ResellerStore(), s.License, s.opts.Now, rand.Reader),
		Analytics: s.Analytics, Usage: s.Usage, Checks: s.readiness(), Metrics: s.Metrics,
		UI: dashboard.Mount(s.opts.Log, s.opts.Now)}, s.DB, s.opts.Log, s.opts.Now, httpapi.Config{TrustProxy: s.cfg.TrustProxy, MaxArtifact: s.cfg.ArtifactLimit(),
		MetricsToken:  s.cfg.MetricsToken,
		Rate:          ratelimit.Rate{PerSecond: lim.RateLimit, Burst: lim.RateBurst},
		AdminRate:     ratelimit.Rate{PerSecond: lim.AdminRateLimit, Burst: lim.AdminRateBurst},
		HeartbeatRate: ratelimit.Rate{PerSecond: lim.HeartbeatRateLimit, Burst: lim.HeartbeatRateBurst}})
	keys, err := signing.Load(s.cfg.SigningPath(s.cfg.Data))
	if err != nil {
		return fmt.Errorf("reply-signing keys (--signing-dir %s): %w", s.cfg.SigningPath(s.cfg.Data), err)
	}
	if keys != nil {
		s.api.SetSigning(keys)
		s.opts.Log.Info("signing replies", "key", keys.Active.ID, "spki_sha256", keys.Active.SPKISHA256, "keys", len(keys.Keys))
	}
	if err := s.loadLicenseKeys(); err != nil {
		return err
	}
	flush, reap := s.opts.FlushEvery, s.opts.ReapEvery
	if flush <= 0 {
		flush = flushInterval(s.DB.Engine(), s.cfg.SessionCache)
	}
	if reap <= 0 {
		reap = 15 * time.Second
	}
	warnings, _ := s.cfg.ExpiringWindows() // validated
	var wake chan struct{}
	if !s.opts.ManualDispatch {
		wake = make(chan struct{}, 1)
		s.DB.OnEvents(func() {
			select {
			case wake <- struct{}{}:
			default: // a run is already due
			}
		})
	}
	dispatch := s.opts.DispatchEvery
	if dispatch <= 0 {
		dispatch = time.Second
	}
	// Sweeps over shared data run in one process at a time: the holder of
	// the job's lease (store.TryLease), renewed on each run and taken over
	// by another process two intervals after its holder stops.
	holder := GeneratePassword()
	leader := func(name string, every time.Duration, run func(context.Context) error) sweep.Job {
		return sweep.Job{Name: name, Interval: every, Run: func(ctx context.Context) error {
			now := s.opts.Now()
			if ok, err := s.DB.TryLease(ctx, name, holder, now, now.Add(2*every)); err != nil || !ok {
				return err
			}
			return run(ctx)
		}}
	}
	retention := s.cfg.WebhookLogRetention
	s.jobs = sweep.New(s.opts.Log,
		// Per process: its own buffers, and deliveries claimed row by row.
		sweep.Job{Name: "dispatch-webhooks", Interval: dispatch, Run: s.Dispatcher.Run, Wake: wake},
		sweep.Job{Name: "flush-heartbeats", Interval: flush, Run: s.License.FlushTouches, Final: s.License.FlushTouches},
		sweep.Job{Name: "flush-update-checks", Interval: flush, Run: s.Updates.FlushChecks, Final: s.Updates.FlushChecks},
		sweep.Job{Name: "flush-usage", Interval: flush, Run: s.Usage.Flush, Final: s.Usage.Flush},
		// One leader at a time.
		leader("reap-sessions", reap, func(ctx context.Context) error {
			n, err := s.License.ReapSessions(ctx)
			if n > 0 {
				s.opts.Log.Info("reaped silent sessions", "count", n)
			}
			return err
		}),
		leader("queue-renewals", 10*time.Minute, func(ctx context.Context) error {
			n, err := s.Orders.QueueRenewals(ctx)
			if n > 0 {
				s.opts.Log.Info("made subscription renewal orders", "count", n)
			}
			return err
		}),
		leader("expire-keys", time.Minute, func(ctx context.Context) error {
			n, err := s.License.ExpireKeys(ctx)
			if n > 0 {
				s.opts.Log.Info("expired keys", "count", n)
			}
			return err
		}),
		leader("warn-expiring-keys", 10*time.Minute, func(ctx context.Context) error {
			_, err := s.License.WarnExpiring(ctx, warnings)
			return err
		}),
		leader("purge-lockouts", 10*time.Minute, func(ctx context.Context) error {
			// Counters older than a day of windows and locks can no longer matter.
			_, err := guard.Purge(ctx, lim.LockoutWindow+lim.LockoutDuration+24*time.Hour)
			return err
		}),
		leader("sample-sessions", 5*time.Minute, func(ctx context.Context) error {
			return s.Analytics.Sample(ctx, s.opts.Now()) // active sessions over time
		}),
		leader("purge-revoked-jwts", time.Hour, func(ctx context.Context) error {
			_, err := s.DB.PurgeRevokedJWTs(ctx, s.opts.Now()) // expired anyway
			return err
		}),
		leader("purge-key-sightings", time.Hour, func(ctx context.Context) error {
			_, err := s.DB.PurgeSightings(ctx, s.opts.Now().Add(-8760*time.Hour)) // the longest leak window
			return err
		}),
		leader("purge-webhook-log", time.Hour, func(ctx context.Context) error {
			if retention <= 0 {
				return nil
			}
			d, e, err := s.DB.PurgeWebhookLog(ctx, s.opts.Now().Add(-retention), 1000)
			if d+e > 0 {
				s.opts.Log.Info("purged webhook log", "deliveries", d, "events", e)
			}
			return err
		}),
	)
	s.jobs.Observe(s.Metrics.Job)
	return nil
}

// readiness lists the checks of /readyz: the database answers, it takes
// writes (no failed write stands, see store.DB.Writable), its schema is the
// one this binary knows, and the background jobs run.
func (s *Server) readiness() []httpapi.Check {
	return []httpapi.Check{
		{Name: "database", Run: s.DB.Ping},
		{Name: "writes", Run: s.DB.Writable},
		{Name: "migrations", Run: s.DB.SchemaCurrent},
		{Name: "jobs", Run: func(context.Context) error {
			if s.jobs == nil || !s.jobs.Running() {
				return errors.New("background jobs are not running")
			}
			return nil
		}},
	}
}

// Jobs is the runner of the background jobs (tests stop it).
func (s *Server) Jobs() *sweep.Runner { return s.jobs }

// API is the HTTP API the server serves (tests read its route table).
func (s *Server) API() *httpapi.API { return s.api }

// checkFirstAdmin notes whether the first admin is still to be created and,
// if so, checks the configured username and password now, so that a bad
// KEYWARD_ADMIN_PASSWORD stops the start before anything is bound.
func (s *Server) checkFirstAdmin(ctx context.Context) error {
	has, err := s.Admins.HasUsers(ctx)
	if err != nil {
		return err
	}
	s.firstAdmin = !has
	if has {
		return nil
	}
	pass := s.cfg.AdminPassword
	if pass == "" {
		pass = GeneratePassword()
	}
	if err := admin.ValidateNew(s.cfg.AdminUsername, pass); err != nil {
		return fmt.Errorf("create first admin: %w", err)
	}
	return nil
}

// bootstrapAdmin creates the first admin when none exists, from the
// configured password or a generated one printed once. Start calls it once
// every listener is bound. Another process sharing the database may have
// created the first admin meanwhile; then there is nothing to do.
func (s *Server) bootstrapAdmin(ctx context.Context) error {
	if !s.firstAdmin {
		return nil
	}
	has, err := s.Admins.HasUsers(ctx)
	if err != nil || has {
		return err
	}
	pass := s.cfg.AdminPassword
	generated := pass == ""
	if generated {
		pass = GeneratePassword()
	}
	if _, err := s.Admins.CreateUser(ctx, audit.System, s.cfg.AdminUsername, pass); err != nil {
		if has, herr := s.Admins.HasUsers(ctx); herr == nil && has {
			return nil // another process created it at the same moment
		}
		return fmt.Errorf("create first admin: %w", err)
	}
	s.firstAdmin = false
	if generated {
		fmt.Fprintf(s.opts.Stdout, "Created admin %q with password: %s\nThis password is shown only once.\n", s.cfg.AdminUsername, pass)
	} else {
		fmt.Fprintf(s.opts.Stdout, "Created admin %q from KEYWARD_ADMIN_PASSWORD.\n", s.cfg.AdminUsername)
	}
	return nil
}

// GeneratePassword returns 20 random characters from an unambiguous alphabet.
func GeneratePassword() string {
	const alphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 20)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return s.api.Handler() }

// Start binds every listener (the main one and, where configured, the
// metrics and plain-HTTP ones), then creates the first admin when there is
// none (printing its generated password once), then starts the background
// jobs and serves; it returns once the listeners accept connections. When a
// listener cannot be bound nothing has been created or started, so the next
// start that binds still creates the admin and shows its password: a busy
// port cannot lose the only password.
func (s *Server) Start(ctx context.Context) error {
	handler := s.Handler()
	var tlsCfg *tls.Config
	var challenge func(http.Handler) http.Handler
	if s.cfg.TLS() {
		var err error
		if tlsCfg, challenge, err = s.tlsConfig(); err != nil {
			return err
		}
	}
	var bound []net.Listener
	unbind := func() {
		for _, l := range bound {
			l.Close()
		}
	}
	listen := func(addr, flag string) (net.Listener, error) {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			unbind()
			return nil, s.listenError(addr, flag, err)
		}
		bound = append(bound, l)
		return l, nil
	}
	ln, err := listen(s.cfg.Addr, "--addr")
	if err != nil {
		return err
	}
	var ml, pl net.Listener
	if s.cfg.MetricsAddr != "" {
		if ml, err = listen(s.cfg.MetricsAddr, "--metrics-addr"); err != nil {
			return err
		}
	}
	httpAddr := s.cfg.HTTPAddr
	if httpAddr == "" && s.cfg.ACMEDomain != "" {
		httpAddr = ":80"
	}
	if tlsCfg != nil && httpAddr != "" {
		flag := "--http-addr"
		if s.cfg.HTTPAddr == "" {
			flag = "--http-addr, :80 by default with --acme-domain"
		}
		if pl, err = listen(httpAddr, flag); err != nil {
			return err
		}
	}
	// Every listener is bound: only now is the first admin created and its
	// password shown.
	if err := s.bootstrapAdmin(ctx); err != nil {
		unbind()
		return err
	}
	s.addr = ln.Addr()
	s.jobs.Start(ctx)
	main := s.newHTTPServer(handler)
	if tlsCfg != nil {
		main.TLSConfig = tlsCfg
		_, port, _ := net.SplitHostPort(s.addr.String())
		redirect := redirectHandler(handler, port)
		if challenge != nil {
			redirect = challenge(redirect)
		}
		s.serve(main, tls.NewListener(ln, tlsCfg))
		if pl != nil {
			s.serve(s.newHTTPServer(redirect), pl)
		}
	} else {
		s.serve(main, ln)
	}
	if ml != nil {
		s.metricsAddr = ml.Addr()
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", s.api.MetricsHandler())
		s.serve(s.newHTTPServer(mux), ml)
	}
	return nil
}

// listenError explains a listener that could not be bound: which setting
// names the address, the usual causes of a busy or privileged port, and,
// when the first admin is still to be created, that it was not (the next
// start that binds creates it and prints its password).
func (s *Server) listenError(addr, flag string, err error) error {
	var hint string
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		hint = "; another process (perhaps another keyward) listens there: stop it or choose another address with " + flag
	case errors.Is(err, syscall.EACCES):
		hint = "; ports below 1024 need root or the CAP_NET_BIND_SERVICE capability: choose a port of 1024 or more with " + flag
	}
	if s.firstAdmin {
		hint += "; no admin was created: the first start that binds every listener creates it and prints its password"
	}
	return fmt.Errorf("listen on %s (%s): %w%s", addr, flag, err, hint)
}

func (s *Server) newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.opts.Log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return s.requests },
	}
}

func (s *Server) serve(srv *http.Server, ln net.Listener) {
	s.servers = append(s.servers, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Log.Error("http server stopped", "err", err)
		}
	}()
}

// tlsConfig returns the TLS configuration and, with ACME, the wrapper that
// answers HTTP-01 challenges on the plain listener.
func (s *Server) tlsConfig() (*tls.Config, func(http.Handler) http.Handler, error) {
	if s.cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil, nil
	}
	m := &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		HostPolicy: autocert.HostWhitelist(strings.Split(s.cfg.ACMEDomain, ",")...),
		Cache:      autocert.DirCache(filepath.Join(s.cfg.Data, "acme")),
		Email:      s.cfg.ACMEEmail,
	}
	cfg := m.TLSConfig()
	cfg.MinVersion = tls.VersionTLS12
	return cfg, m.HTTPHandler, nil
}

// redirectHandler serves the plain-HTTP listener when TLS is on: the client
// API is answered in place, because shipped clients do not follow redirects
// and their bodies are enveloped anyway (sdk-compat §7.1); everything else is
// redirected to HTTPS with 308 so that POST bodies survive. The redirect
// keeps the host the client asked for and points at httpsPort, the TLS
// listener's port (left out when it is 443).
func redirectHandler(api http.Handler, httpsPort string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if strings.HasPrefix(p, "/api/") && !strings.HasPrefix(p, "/api/admin/") && !strings.HasPrefix(p, "/api/reseller/") {
			api.ServeHTTP(w, r)
			return
		}
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if httpsPort != "" && httpsPort != "443" {
			host = net.JoinHostPort(host, httpsPort)
		} else if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusPermanentRedirect)
	})
}

// Addr is the main listener's address (useful with port 0).
func (s *Server) Addr() string {
	if s.addr == nil {
		return ""
	}
	return s.addr.String()
}

// MetricsAddr is the address of the separate metrics listener, or "".
func (s *Server) MetricsAddr() string {
	if s.metricsAddr == nil {
		return ""
	}
	return s.metricsAddr.String()
}

// cutGrace is how long a forced stop waits for the requests it cut to
// unwind (an upload removing its temp file) before closing what they use.
const cutGrace = 5 * time.Second

// Close shuts down in order: stop accepting and let in-flight requests
// finish, stop the background jobs letting runs under way finish (then
// flushing buffered heartbeats), then close the blob store and the
// database. Requests and runs share one limit, --shutdown-timeout (or ctx,
// when it ends first): when it is hit, the stop is forced — the requests
// still running are cancelled and their connections closed, the job runs
// cancelled, each one named in the log — and Close returns an error
// saying what it cut.
func (s *Server) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StopTimeout())
	defer cancel()
	var errs []error
	forced := false
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil {
			if ctx.Err() == nil {
				errs = append(errs, err)
			}
			forced = forced || ctx.Err() != nil
		}
	}
	var cutReqs int
	if forced && s.api != nil {
		cutReqs = s.cut()
	}
	var cutJobs []string
	if s.jobs != nil {
		cutJobs = s.jobs.Shutdown(ctx)
		for _, j := range cutJobs {
			s.opts.Log.Warn("shutdown: job cut", "job", j, "shutdown_timeout", s.cfg.StopTimeout().String())
		}
	}
	if forced || len(cutJobs) > 0 {
		errs = append(errs, fmt.Errorf("forced stop after %s (--shutdown-timeout): cut %d requests and %d job runs",
			s.cfg.StopTimeout(), cutReqs, len(cutJobs)))
	}
	if c, ok := s.blobs.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	errs = append(errs, s.DB.Close())
	return errors.Join(errs...)
}

// cut forces the HTTP stop: it names every request still running in the
// log (method, route pattern and request id — never the path or a body),
// cancels their contexts, closes every connection, and waits up to
// cutGrace for the handlers to return, so that nothing they hold (an
// upload's temp file) is left behind. It returns how many were cut.
func (s *Server) cut() int {
	running := s.api.InFlight()
	for _, r := range running {
		route := r.Route
		if route == "" {
			route = "unmatched"
		}
		s.opts.Log.Warn("shutdown: request cut", "method", r.Method, "route", route, "request_id", r.RequestID,
			"running_for", time.Since(r.Since).Round(time.Millisecond).String(), "shutdown_timeout", s.cfg.StopTimeout().String())
	}
	s.cutRequests()
	for _, srv := range s.servers {
		srv.Close()
	}
	grace, cancel := context.WithTimeout(context.Background(), cutGrace)
	defer cancel()
	if !s.api.WaitIdle(grace) {
		s.opts.Log.Error("shutdown: cut requests still running", "count", len(s.api.InFlight()))
	}
	return len(running)
}

// openBlobs opens the store of update artifacts: the S3-compatible bucket
// when one is configured, else a directory (--blob-dir or <data>/blobs).
func openBlobs(ctx context.Context, cfg config.Config) (blob.Store, error) {
	if cfg.S3Bucket != "" {
		return blob.OpenS3(ctx, blob.S3Config{Endpoint: cfg.S3Endpoint, Bucket: cfg.S3Bucket, Region: cfg.S3Region,
			AccessKey: cfg.S3AccessKey, SecretKey: cfg.S3SecretKey, Prefix: cfg.S3Prefix, Insecure: cfg.S3Insecure})
	}
	dir := cfg.BlobDir
	if dir == "" {
		if cfg.Data == "" {
			return nil, errors.New("--blob-dir (KEYWARD_BLOB_DIR) or --data is needed for update artifacts")
		}
		dir = filepath.Join(cfg.Data, "blobs")
	}
	d, err := blob.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("blob directory %s: %w", dir, err)
	}
	return d, nil
}

// loadLicenseKeys loads the Ed25519 keys that sign offline license files
// (the license-file subdirectory of the signing directory) and hands them
// to the API. A directory without a key gets one, active, at first start,
// as the secret key file does: offline files then work without a setup
// step, and processes sharing the directory agree on the key. When it
// cannot be written (a read-only mount of the reply keys) keyward starts
// without license-file keys and says so; a key file that does not load
// stops the start, as a bad reply key does.
func (s *Server) loadLicenseKeys() error {
	dir := signing.LicenseKeyDir(s.cfg.SigningPath(s.cfg.Data))
	set, created, err := signing.EnsureLicenseKeys(dir)
	if err != nil {
		if entries, _ := os.ReadDir(dir); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), ".pem") }) {
			return fmt.Errorf("license-file keys (%s): %w", dir, err) // keys that do not load
		}
		s.opts.Log.Warn("no license-file signing key: offline license files cannot be issued until one is created (keyward keys license-file create)",
			"dir", dir, "err", err)
		return nil
	}
	if created {
		s.opts.Log.Warn("generated a license-file signing key: back up the signing directory, and give every process the same one",
			"dir", dir, "kid", set.Active.ID)
	}
	s.api.SetLicenseKeys(set)
	s.opts.Log.Info("license-file keys", "kid", set.Active.ID, "keys", len(set.Keys))
	return nil
}

// flushInterval is how often buffered heartbeat times are written. On
// SQLite with the session cache a heartbeat reads no SQLite, so a commit
// costs it nothing, and a flush a quarter second keeps each one's burst of
// CPU (which holds one of a small machine's cores) a quarter as long: the
// heartbeat's tail at half load (docs/performance.md, "The session cache
// without pointers"). Without the cache every commit makes SQLite's
// readers reload their pages, and on PostgreSQL other processes rely on
// times at most a second old (docs/deploy.md): once a second there.
func flushInterval(engine store.Engine, sessionCache int) time.Duration {
	if engine == store.SQLite && sessionCache > 0 {
		return 250 * time.Millisecond
	}
	return time.Second
}
