// Package cli is keyward's command line: serve, migrate, admin create and
// reset-password, loadtest, version and the other subcommands. Run parses arguments and returns an exit code, so
// tests drive the real commands.
package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/server"
	"github.com/keyward/keyward/internal/store"
)

// Version is set at build time with -ldflags "-X .../cli.Version=…".
var Version = "dev"

type cli struct {
	ConfigFile kong.ConfigFlag `name:"config" env:"KEYWARD_CONFIG" type:"existingfile" placeholder:"FILE" help:"JSON file of settings named as their flags (session-timeout or session_timeout); flags and environment variables override it."`

	Config   configCmd   `cmd:"" help:"Show the effective configuration."`
	Serve    serveCmd    `cmd:"" help:"Run the keyward server."`
	Migrate  migrateCmd  `cmd:"" help:"Apply database migrations and exit."`
	Admin    adminCmd    `cmd:"" help:"Manage admin users."`
	Keys     keysCmd     `cmd:"" help:"Manage keyward's keys (reply signing, license files, the secret key file)."`
	License  licenseCmd  `cmd:"" help:"Work with offline license files (verify)."`
	Import   importCmd   `cmd:"" help:"Import license keys from a CSV (keyward's export layout)."`
	Backup   backupCmd   `cmd:"" help:"Write a consistent archive of a SQLite installation (database, artifacts, signing keys), also while it serves."`
	Restore  restoreCmd  `cmd:"" help:"Restore an archive written by keyward backup into a data directory."`
	Move     moveCmd     `cmd:"" help:"Copy a whole SQLite installation into an empty PostgreSQL database, verified by counts and checksums."`
	Loadtest loadtestCmd `cmd:"" help:"Measure heartbeat, login and check-key throughput against an echo baseline."`
	Version  versionCmd  `cmd:"" help:"Print the version."`
	Client   clientCmd   `cmd:"" help:"A command-line client of a keyward server (login, heartbeat, check, trial, update)."`
}

// env carries what commands need besides their flags.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	// baseURL is the --url of a client command, once its client is built.
	baseURL string
}

// clockKey is the context key of the clock set by withClock.
type clockKey struct{}

// withClock returns ctx carrying now as the clock of the commands that
// write to the database directly (import keys, admin create and
// reset-password): a test sharing a database with a server on an injected
// clock runs them at that server's time, so what they store (an imported
// key's creation time, whether its expiry has passed) agrees with it.
func withClock(ctx context.Context, now func() time.Time) context.Context {
	return context.WithValue(ctx, clockKey{}, now)
}

// clockOf is the clock withClock put on ctx, else time.Now.
func clockOf(ctx context.Context) func() time.Time {
	if now, ok := ctx.Value(clockKey{}).(func() time.Time); ok {
		return now
	}
	return time.Now
}

// Run executes the command line args (without the program name) and returns
// the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c cli
	exit := -1
	parser, err := newParser(&c, stdout, stderr, func(code int) { exit = code; panic(exitPanic{}) })
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	code := func() (code int) {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(exitPanic); ok {
					code = exit
					return
				}
				panic(p)
			}
		}()
		kctx, err := parser.Parse(args)
		if err != nil {
			printError(stderr, flagHint(err, args))
			return 2
		}
		if err := kctx.Run(&env{ctx: ctx, stdout: stdout, stderr: stderr}); err != nil {
			printError(stderr, err)
			return 1
		}
		return 0
	}()
	return code
}

type exitPanic struct{}

// newParser is keyward's command-line parser over c.
func newParser(c *cli, stdout, stderr io.Writer, exit func(int)) (*kong.Kong, error) {
	return kong.New(c, kong.Name("keyward"),
		kong.Description("Self-hosted license, session, trial and update server."),
		kong.Writers(stdout, stderr), kong.UsageOnError(), kong.Configuration(jsonConfig),
		kong.Exit(exit))
}

// flagHints are flags people reach for that keyward spells differently.
var flagHints = map[string]string{
	"--port":   "use --addr 127.0.0.1:PORT (this machine only) or --addr :PORT (every interface)",
	"--host":   "use --addr HOST:PORT",
	"--listen": "use --addr HOST:PORT",
}

// flagHint adds a hint to kong's "unknown flag" error for a flag in
// flagHints, with the value args gave it in place of PORT (--port 8081 →
// --addr :8081).
func flagHint(err error, args []string) error {
	msg := err.Error()
	for flag, hint := range flagHints {
		if rest, ok := strings.CutPrefix(msg, "unknown flag "+flag); ok && (rest == "" || strings.HasPrefix(rest, ",")) {
			for i, a := range args {
				v, ok := strings.CutPrefix(a, flag+"=")
				if !ok && a == flag && i+1 < len(args) {
					v, ok = args[i+1], true
				}
				if _, perr := strconv.Atoi(v); ok && perr == nil {
					hint = strings.ReplaceAll(hint, "PORT", v)
					break
				}
			}
			return fmt.Errorf("%w: %s", err, hint)
		}
	}
	return err
}

// printError writes err as one "keyward: …" line. Errors of the client SDK
// (and any other that already names the program) begin with "keyward: "
// themselves; the prefix is written once, not doubled.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "keyward: %s\n", strings.TrimPrefix(err.Error(), "keyward: "))
}

type serveCmd struct {
	config.Config `embed:""`
}

func (c *serveCmd) Run(e *env) error {
	log := newLogger(e.stderr, c.LogFormat, c.LogLevel)
	srv, err := server.New(e.ctx, c.Config, server.Options{Log: log, Stdout: e.stdout})
	if err != nil {
		return err
	}
	if err := srv.Start(e.ctx); err != nil {
		srv.Close(context.Background())
		return err
	}
	scheme := "http"
	if c.TLS() {
		scheme = "https"
	}
	engine := "SQLite in " + c.Data
	if c.DatabaseURL != "" {
		engine = "PostgreSQL"
	}
	log.Info("keyward listening", "url", scheme+"://"+srv.Addr(), "database", engine, "version", Version)
	fmt.Fprintf(e.stdout, "keyward %s listening on %s://%s (%s)\n", Version, scheme, srv.Addr(), engine)
	fmt.Fprintf(e.stdout, "dashboard: %s://%s/dashboard/\n", scheme, srv.Addr())
	<-e.ctx.Done()
	log.Info("shutting down", "shutdown_timeout", c.StopTimeout().String())
	return srv.Close(context.Background()) // within --shutdown-timeout
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lvl slog.Level
	lvl.UnmarshalText([]byte(strings.ToUpper(level)))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

type migrateCmd struct {
	config.Database `embed:""`
}

func (c *migrateCmd) Run(e *env) error {
	// Schema only: no secret is read or written, so no key file is needed.
	db, err := store.Open(e.ctx, store.Options{DataDir: c.Data, URL: c.DatabaseURL, Synchronous: c.SQLiteSynchronous})
	if err != nil {
		return err
	}
	defer db.Close()
	v, err := db.Migrate(e.ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "database schema at version %d\n", v)
	return nil
}

type adminCmd struct {
	Create        adminCreateCmd        `cmd:"" help:"Create an admin user."`
	ResetPassword adminResetPasswordCmd `cmd:"" name:"reset-password" help:"Set a new password for an admin who lost theirs, ending every sign-in of that admin."`
}

type adminCreateCmd struct {
	config.Database `embed:""`
	Username        string `name:"username" required:"" env:"KEYWARD_NEW_ADMIN_USERNAME" help:"Username (3-64 letters, digits or _ . @ -)."`
	Password        string `name:"password" env:"KEYWARD_NEW_ADMIN_PASSWORD" help:"Password (8-72 bytes); generated and printed when empty."`
	BcryptCost      int    `name:"bcrypt-cost" default:"12" env:"KEYWARD_BCRYPT_COST" help:"bcrypt cost."`
}

func (c *adminCreateCmd) Run(e *env) error {
	cfg := config.Config{Database: c.Database}
	srv, err := openServices(e.ctx, cfg, c.BcryptCost)
	if err != nil {
		return err
	}
	defer srv.DB.Close()
	pass := c.Password
	if pass == "" {
		pass = server.GeneratePassword()
		fmt.Fprintf(e.stdout, "generated password: %s\n", pass)
	}
	if _, err := srv.Admins.CreateUser(e.ctx, audit.Actor{Kind: "cli", Name: "keyward admin create"}, c.Username, pass); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "created admin %q\n", c.Username)
	return nil
}

// adminResetPasswordCmd is the way back in for an operator who lost the
// only admin password: it needs the database (and its secret key file),
// not a sign-in.
type adminResetPasswordCmd struct {
	config.Database `embed:""`
	Username        string `name:"username" required:"" env:"KEYWARD_RESET_ADMIN_USERNAME" help:"Username of the admin whose password is reset."`
	Password        string `name:"password" env:"KEYWARD_RESET_ADMIN_PASSWORD" help:"New password (8-72 bytes); generated and printed once when empty. Prefer the environment variable to keep it out of the shell history."`
	Disable2FA      bool   `name:"disable-2fa" env:"KEYWARD_RESET_ADMIN_DISABLE_2FA" help:"Also turn two-factor sign-in off (removes the TOTP secret and the recovery codes), for a lost authenticator."`
	BcryptCost      int    `name:"bcrypt-cost" default:"12" env:"KEYWARD_BCRYPT_COST" help:"bcrypt cost."`
}

func (c *adminResetPasswordCmd) Run(e *env) error {
	if c.DatabaseURL == "" {
		// A mistyped --data would otherwise create an empty database
		// (and a key file) there and report no such admin.
		if _, err := os.Stat(filepath.Join(c.Data, store.DBFile)); err != nil {
			return fmt.Errorf("no keyward database in --data %s (%s): give the data directory the server uses, or --database-url", c.Data, store.DBFile)
		}
	}
	cfg := config.Config{Database: c.Database}
	srv, err := openServices(e.ctx, cfg, c.BcryptCost)
	if err != nil {
		return err
	}
	defer srv.DB.Close()
	pass, generated := c.Password, c.Password == ""
	if generated {
		pass = server.GeneratePassword()
	}
	res, err := srv.Admins.ResetPassword(e.ctx, audit.Actor{Kind: "cli", Name: "keyward admin reset-password"}, c.Username, pass, c.Disable2FA)
	if res == nil {
		return err
	}
	// The password is reset (err may still report the lockout not cleared).
	if generated {
		fmt.Fprintf(e.stdout, "generated password: %s\nThis password is shown only once.\n", pass)
	}
	fmt.Fprintf(e.stdout, "reset the password of admin %q; every sign-in made before is ended\n", c.Username)
	switch {
	case res.TwoFactorDisabled:
		fmt.Fprintln(e.stdout, "two-factor sign-in turned off and its recovery codes removed; turn it on again from the profile page")
	case res.User.TOTPSecret != "":
		fmt.Fprintln(e.stdout, "two-factor sign-in stays on (--disable-2fa turns it off for a lost authenticator)")
	}
	if res.ActiveTokens > 0 {
		fmt.Fprintf(e.stdout, "%d personal access token(s) of this admin still work; revoke any that may be exposed from the profile page\n", res.ActiveTokens)
	}
	return err
}

type versionCmd struct{}

func (versionCmd) Run(e *env) error {
	fmt.Fprintf(e.stdout, "keyward %s\n", Version)
	return nil
}
