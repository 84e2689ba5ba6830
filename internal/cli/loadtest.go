package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/loadtest"
	"github.com/keyward/keyward/internal/server"
	"github.com/keyward/keyward/internal/store"
)

// loadtestCmd drives a keyward (a running one at --url, or one it starts in
// this process on a fresh SQLite database) and prints throughput and latency
// next to the echo baseline.
type loadtestCmd struct {
	URL               string        `name:"url" env:"KEYWARD_LOADTEST_URL" help:"Base URL of the keyward to drive, or several comma-separated (processes on one database: the first provisions, the measured load is spread over all by connection); empty starts one in this process."`
	AdminUsername     string        `name:"admin-username" default:"admin" env:"KEYWARD_ADMIN_USERNAME" help:"Admin user that provisions the test app (with --url or --database-url)."`
	AdminPassword     string        `name:"admin-password" env:"KEYWARD_ADMIN_PASSWORD" help:"That admin's password (with --url or --database-url)."`
	Data              string        `name:"data" help:"Data directory of the in-process server (default: a fresh temporary directory, removed afterwards)."`
	DatabaseURL       string        `name:"database-url" help:"postgres:// URL for the in-process server instead of SQLite."`
	SecretKeyFile     string        `name:"secret-key-file" type:"path" help:"Key file of the secrets in --database-url's database (default: <data>/secret.key; without --data a temporary one, so run again on that database with --data or this flag)."`
	SQLiteSynchronous string        `name:"sqlite-synchronous" default:"full" enum:"full,normal" help:"SQLite durability of the in-process server: full (as keyward serve's default) or normal."`
	SessionCache      int           `name:"session-cache" aliases:"sqlite-session-cache" default:"1000000" help:"Sessions the in-process server keeps in memory for heartbeats (as keyward serve's --session-cache; 0 reads every heartbeat from the database)."`
	Mode              string        `name:"mode" default:"heartbeat" enum:"heartbeat,login,check-key,mix" help:"What to measure: heartbeat, login, check-key, or mix (a fleet's traffic, weighed by --mix)."`
	Sessions          int           `name:"sessions" default:"10000" help:"Live sessions to open before measuring heartbeats."`
	Keys              int           `name:"keys" help:"Keys to generate (default: one per session; 1000 for login and check-key)."`
	Conns             int           `name:"conns" default:"32" help:"Concurrent connections."`
	Duration          time.Duration `name:"duration" default:"10s" help:"Measuring time of each phase (echo, then the mode)."`
	Warmup            time.Duration `name:"warmup" default:"1s" help:"Unmeasured time before each phase."`
	Rounds            int           `name:"rounds" default:"1" help:"Split the echo's and the mode's measuring time into this many parts, measured alternately (echo, mode, echo, mode …), so that a machine whose speed drifts during the run slows both alike; on a shared virtual machine 5 steadies the ratio. The CPU profile covers the mode's first part."`
	HalfRate          bool          `name:"half-rate" help:"Measure the mode once more at half the rate it reached, for the latency under a load the server carries, and the echo at that rate, for the latency the machine itself gives there (requests sealed beforehand and replies checked afterwards, so the load tool adds little of its own; modes heartbeat, login and check-key)."`
	Mix               string        `name:"mix" default:"heartbeat=95,login=2,check-key=2,update=1" help:"Weights of the request kinds in mode mix."`
	Herd              bool          `name:"herd" help:"After the measured phase, every live session's device logs in again at once (modes heartbeat and mix); reports the time to recover."`
	HerdTimeout       time.Duration `name:"herd-timeout" default:"60s" help:"Longest the herd may take."`
	HerdConns         int           `name:"herd-conns" default:"256" help:"Connections the herd's logins share."`
	Keep              bool          `name:"keep" help:"Keep the provisioned app instead of deleting it."`
	CPUProfile        string        `name:"cpu-profile" type:"path" help:"Write a CPU profile of this process (client and in-process server) during the measured phase of the mode to this file."`
	HeapProfile       string        `name:"heap-profile" type:"path" help:"Write a heap profile of this process (client and in-process server), after a collection, at the end of the measured phase of the mode to this file."`
	Trace             string        `name:"trace" type:"path" help:"Write a runtime/trace of this process during the half-rate phase (with --half-rate; its warmup included) to this file, for go tool trace."`
}

func (c *loadtestCmd) Run(e *env) error {
	if c.Trace != "" && !c.HalfRate {
		return fmt.Errorf("--trace covers the half-rate phase: give --half-rate too")
	}
	mix, err := loadtest.ParseMix(c.Mix)
	if err != nil {
		return err
	}
	o := loadtest.Options{
		URL: c.URL, AdminUsername: c.AdminUsername, AdminPassword: c.AdminPassword,
		Mode: loadtest.Mode(c.Mode), Sessions: c.Sessions, Keys: c.Keys, Conns: c.Conns,
		Duration: c.Duration, Warmup: c.Warmup, Rounds: c.Rounds, HalfRate: c.HalfRate, Keep: c.Keep, Progress: e.stderr,
		Mix: mix, Herd: c.Herd, HerdTimeout: c.HerdTimeout, HerdConns: c.HerdConns,
	}
	var db *store.DB // the in-process server's
	if c.URL == "" {
		stop, d, err := c.startServer(e.ctx, &o, e.stderr)
		if err != nil {
			return err
		}
		defer stop()
		db = d
	}
	if c.CPUProfile != "" {
		phase, done, err := recorder(c.CPUProfile, "cpu profile", e.stderr, pprof.StartCPUProfile,
			func(io.Writer) error { pprof.StopCPUProfile(); return nil })
		if err != nil {
			return err
		}
		defer done()
		o.Measured = phase
	}
	if c.HeapProfile != "" {
		phase, done, err := recorder(c.HeapProfile, "heap profile", e.stderr, func(io.Writer) error { return nil },
			func(w io.Writer) error { runtime.GC(); return pprof.WriteHeapProfile(w) })
		if err != nil {
			return err
		}
		defer done()
		if cpu := o.Measured; cpu != nil {
			// The CPU profile stops before the heap's collection.
			o.Measured = func(start bool) { cpu(start); phase(start) }
		} else {
			o.Measured = phase
		}
	}
	if c.Trace != "" {
		phase, done, err := recorder(c.Trace, "trace", e.stderr, trace.Start, func(io.Writer) error { trace.Stop(); return nil })
		if err != nil {
			return err
		}
		defer done()
		o.HalfMeasured = phase
	}
	rep, err := loadtest.Run(e.ctx, o)
	if err != nil {
		return err
	}
	rep.Print(e.stdout)
	if db != nil {
		if b, u := db.WriteBatches(); b > 0 {
			fmt.Fprintf(e.stdout, "write batches: %d commits of %d write transactions (%.1f per commit)\n", b, u, float64(u)/float64(b))
		}
		if sc := db.SessionCacheStatus(); sc.Fills > 0 || sc.ListenFailures > 0 {
			fmt.Fprintf(e.stdout, "session cache: filled %d times", sc.Fills)
			if db.Engine() == store.Postgres {
				fmt.Fprintf(e.stdout, ", %d times not hearing PostgreSQL", sc.ListenFailures)
			}
			fmt.Fprintln(e.stdout)
		}
	}
	if rep.Target.Errors > 0 || rep.Echo.Errors > 0 {
		return fmt.Errorf("%d %s errors, %d echo errors", rep.Target.Errors, rep.Target.Name, rep.Echo.Errors)
	}
	if h := rep.Herd; h != nil && (h.Recovered < h.Sessions || h.Heartbeat.Errors > 0) {
		return fmt.Errorf("herd: %d of %d sessions did not log in again within %s, %d heartbeat errors",
			h.Sessions-h.Recovered, h.Sessions, c.HerdTimeout, h.Heartbeat.Errors)
	}
	return nil
}

// startServer boots a keyward in this process on 127.0.0.1 with a fresh
// temporary SQLite database (or --data / --database-url) and points o at it.
// It returns the server's database, for its statistics.
func (c *loadtestCmd) startServer(ctx context.Context, o *loadtest.Options, stderr io.Writer) (stop func(), db *store.DB, err error) {
	data, cleanup := c.Data, func() {}
	// Without --data (also on PostgreSQL) a temporary directory holds the
	// database or just the generated secret key file.
	if data == "" {
		if data, err = os.MkdirTemp("", "keyward-loadtest-"); err != nil {
			return nil, nil, err
		}
		cleanup = func() { os.RemoveAll(data) }
		if c.DatabaseURL != "" && c.SecretKeyFile == "" {
			fmt.Fprintf(stderr, "loadtest: no --data: update artifacts and the secret key file go to %s, removed at exit; "+
				"a later run on this database needs that key: give --data DIR (or --secret-key-file FILE) to keep it\n", data)
		}
	}
	if o.AdminPassword == "" {
		o.AdminPassword = server.GeneratePassword()
	}
	cfg := config.Config{
		Database: config.Database{Data: data, DatabaseURL: c.DatabaseURL, SecretKeyFile: c.SecretKeyFile, SQLiteSynchronous: c.SQLiteSynchronous},
		Addr:     "127.0.0.1:0", SessionTimeout: 180 * time.Second, SessionCache: c.SessionCache, BcryptCost: 10, TokenTTL: time.Hour,
		LogFormat: "text", LogLevel: "warn", AdminUsername: o.AdminUsername, AdminPassword: o.AdminPassword,
		Limits: config.DefaultLimits(),
	}
	// All load comes from one address: the per-IP limiters would measure
	// themselves, not keyward.
	cfg.RateLimit, cfg.AdminRateLimit, cfg.HeartbeatRateLimit = 0, 0, 0
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := server.New(ctx, cfg, server.Options{Log: log, Stdout: io.Discard})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := srv.Start(ctx); err != nil {
		srv.Close(context.Background())
		cleanup()
		return nil, nil, err
	}
	o.URL = "http://" + srv.Addr()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Close(ctx)
		cleanup()
	}, srv.DB, nil
}

// recorder creates path for a CPU profile, heap profile or trace of one
// phase: phase starts recording into it (true) and stops (false); done
// reports a start or stop that failed, as what, and closes the file.
func recorder(path, what string, stderr io.Writer, start, stop func(io.Writer) error) (phase func(bool), done func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	var serr error
	phase = func(on bool) {
		step := start
		if !on {
			step = stop
		}
		if err := step(f); err != nil && serr == nil {
			serr = err
		}
	}
	done = func() {
		if serr != nil {
			fmt.Fprintf(stderr, "loadtest: %s: %v\n", what, serr)
		}
		f.Close()
	}
	return phase, done, nil
}
