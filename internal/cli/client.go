package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/keyward/keyward/client"
	"github.com/keyward/keyward/internal/licensefile"
	"github.com/keyward/keyward/wire"
)

// Exit codes of `keyward client …`, as docs/clients.md lists them. A kill
// code (BANNED, EXPIRED, …) refusing a sign-in, check or trial is a refusal
// (3): only a session that was open and then ended exits 4.
const (
	exitClientError    = 1 // network or other error
	exitClientRefused  = 3 // the server refused (error_code printed), or check: key not valid
	exitClientKilled   = 4 // an open session ended: kill code, NETWORK_LOST or CLOCK_SKEW
	exitClientSecurity = 5 // a reply failed verification (signature, envelope, redirect)
	exitClientChecksum = 6 // the downloaded file did not match the offered sha256
)

// clientCmd is `keyward client`: a command-line client of a keyward server
// built on the Go SDK (package client), for testing apps and servers.
type clientCmd struct {
	Login       clientLoginCmd       `cmd:"" help:"Sign in with a licence key, print the session and sign out."`
	Heartbeat   clientHeartbeatCmd   `cmd:"" help:"Sign in and run the heartbeat loop, printing one line per beat, until killed or interrupted."`
	Check       clientCheckCmd       `cmd:"" help:"Check a licence key without opening a session (exit 3 when not valid)."`
	Trial       clientTrialCmd       `cmd:"" help:"Start (or resume) this device's trial and print its key."`
	Update      clientUpdateCmd      `cmd:"" help:"Check for and download updates."`
	LicenseFile clientLicenseFileCmd `cmd:"" name:"license-file" help:"Fetch a signed offline license file for the key on this device (binds the device as a login does), or return a floating key's borrowed seat."`
	// OfflineRequest runs on the air-gapped machine: no --url, no network.
	OfflineRequest clientOfflineRequestCmd `cmd:"" name:"offline-request" help:"Print an activation request for an air-gapped machine (no network needed); paste it into the customer portal or give it to the vendor for a license file."`
}

// clientLicenseFileCmd is `keyward client license-file`: it fetches a
// license file (docs/offline.md) and prints what the reply says of it
// (file, valid_until, floating, borrow) and the file to --out, or returns
// a borrowed seat with --return.
type clientLicenseFileCmd struct {
	clientConn `embed:""`
	Key        string `name:"key" env:"KEYWARD_CLIENT_KEY" help:"Licence key (required unless --return)."`
	clientHWID `embed:""`
	Out        string `name:"out" type:"path" placeholder:"FILE" help:"Write the license file to FILE (0600) instead of standard output."`
	Return     string `name:"return" placeholder:"BORROW" help:"Return the borrowed seat BORROW (the borrow a floating key's file printed) instead."`
}

func (c *clientLicenseFileCmd) Run(e *env, k *kong.Context) error {
	cl, err := c.client(e)
	if err != nil {
		return err
	}
	if c.Return != "" {
		if err := cl.ReturnLicenseFile(e.ctx, c.Return); err != nil {
			return clientExit(k, e, err, false)
		}
		fmt.Fprintln(e.stdout, "returned")
		return nil
	}
	if strings.TrimSpace(c.Key) == "" {
		return errors.New("--key is required (or --return BORROW)")
	}
	lf, err := cl.LicenseFile(e.ctx, c.Key, c.value())
	if err != nil {
		return clientExit(k, e, err, false)
	}
	if c.Out == "" {
		_, err = io.WriteString(e.stdout, lf.Text)
		return err
	}
	if err := os.WriteFile(c.Out, []byte(lf.Text), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "file %s\nvalid_until %s\nfloating %v\n", lf.FileID, printTime(&lf.ValidUntil), lf.Floating)
	if lf.BorrowID != "" {
		fmt.Fprintf(e.stdout, "borrow %s\n", lf.BorrowID)
	}
	return nil
}

// clientOfflineRequestCmd is `keyward client offline-request`: it prints
// the air-gapped activation request (docs/offline.md) for a key on this
// device, MACed with the app secret, with a fresh nonce. It needs no
// server: the request is carried by hand.
type clientOfflineRequestCmd struct {
	AppSecret  string `name:"app-secret" required:"" env:"KEYWARD_CLIENT_SECRET" help:"The app's secret (64 hex characters); it MACs the request."`
	AppID      string `name:"app-id" env:"KEYWARD_CLIENT_APP_ID" help:"The app's id, written into the request for people (the server knows the app by the MAC); default: unknown."`
	clientKey  `embed:""`
	clientHWID `embed:""`
	Out        string `name:"out" type:"path" placeholder:"FILE" help:"Write the request to FILE (0600) instead of standard output."`
}

func (c *clientOfflineRequestCmd) Run(e *env) error {
	if len(c.AppSecret) != 64 {
		return errors.New("--app-secret must be the app's 64-character secret")
	}
	appID := c.AppID
	if appID == "" {
		appID = "unknown"
	}
	req, err := licensefile.NewRequest(appID, strings.TrimSpace(c.Key), c.value(), time.Now())
	if err != nil {
		return err
	}
	text, err := licensefile.MakeRequest(req, c.AppSecret)
	if err != nil {
		return err
	}
	if c.Out != "" {
		return os.WriteFile(c.Out, []byte(text), 0o600)
	}
	_, err = io.WriteString(e.stdout, text)
	return err
}

type clientUpdateCmd struct {
	Check    clientUpdateCheckCmd    `cmd:"" help:"Ask whether an update is available."`
	Download clientUpdateDownloadCmd `cmd:"" help:"Download the offered update (resumable, sha256-verified)."`
}

// clientConn are the flags every client command takes.
type clientConn struct {
	URL    string   `name:"url" required:"" env:"KEYWARD_CLIENT_URL" help:"Base URL of the keyward server."`
	Secret string   `name:"secret" required:"" env:"KEYWARD_CLIENT_SECRET" help:"The app's secret (64 hex characters)."`
	Pin    []string `name:"pin" type:"existingfile" env:"KEYWARD_CLIENT_PIN" placeholder:"FILE" help:"PEM public key of the server's reply signing key; replies must be signed with it (repeatable)."`
}

type clientKey struct {
	Key string `name:"key" required:"" env:"KEYWARD_CLIENT_KEY" help:"Licence key."`
}

type clientHWID struct {
	HWID string `name:"hwid" env:"KEYWARD_CLIENT_HWID" help:"Device id (default: the host name)."`
}

func (h clientHWID) value() string {
	if h.HWID != "" {
		return h.HWID
	}
	n, _ := os.Hostname()
	return "keyward-cli-" + n
}

// client builds the SDK client of c, noting its base URL on e for
// clientExit's hints.
func (c clientConn) client(e *env) (*client.Client, error) {
	e.baseURL = c.URL
	opts := []client.Option{client.WithUserAgent("keyward-cli/" + Version)}
	if len(c.Pin) > 0 {
		var pems [][]byte
		for _, f := range c.Pin {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			pems = append(pems, b)
		}
		opts = append(opts, client.WithPinnedKeys(pems...))
	}
	return client.New(c.URL, c.Secret, opts...)
}

// clientExit prints err and exits with the code its kind calls for; open
// says whether a session was open, so a kill code ends it (4) rather than
// refusing a request (3).
func clientExit(k *kong.Context, e *env, err error, open bool) error {
	if err == nil {
		return nil
	}
	code := exitClientError
	var api *client.APIError
	var sec *client.SecurityError
	switch {
	case open && client.IsKill(err):
		code = exitClientKilled
	case errors.As(err, &sec):
		code = exitClientSecurity
	case errors.Is(err, client.ErrChecksum):
		code = exitClientChecksum
	case errors.As(err, &api):
		code = exitClientRefused
	}
	printError(e.stderr, err)
	if errors.As(err, &api) && api.Code == wire.CodeDeviceLimit {
		// The refusal carries how many devices (or, for a floating key,
		// seats held by running machines) are in use, of how many.
		used, uok := fieldInt(api.Fields["devices_used"])
		limit, lok := fieldInt(api.Fields["max_devices"])
		if uok && lok {
			fmt.Fprintf(e.stderr, "keyward: in use: %d of %d\n", used, limit)
		}
	}
	if errors.As(err, &api) && api.Status == 404 && strings.HasSuffix(strings.TrimRight(e.baseURL, "/"), "/api") {
		fmt.Fprintf(e.stderr, "keyward: hint: --url %s ends in /api; give the server's root (without /api): the client adds /api/… itself\n", e.baseURL)
	}
	k.Exit(code)
	return nil
}

// fieldInt reads a whole number of a decoded reply (float64 or json.Number).
func fieldInt(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		return int(n), n == float64(int(n))
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

func printTime(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// keyExpiry is a checked key's expiry as check prints it. The wire's null
// expires_at means "never" only for a lifetime key: a days key nobody has
// activated yet has none so far, and starts its days at activation.
func keyExpiry(k client.KeyInfo) string {
	switch {
	case k.ExpiresAt != nil, k.KeyType == "lifetime":
		return printTime(k.ExpiresAt)
	case k.ActivatedAt == nil:
		return fmt.Sprintf("not activated (%d days from activation)", k.Duration)
	}
	return "none"
}

func printSession(w io.Writer, s *client.Session) {
	fmt.Fprintf(w, "session %s\ninterval %ds\n", s.ID, int(s.Interval/time.Second))
	if s.LicenseKey != "" {
		fmt.Fprintf(w, "key %s\n", s.LicenseKey)
	}
	fmt.Fprintf(w, "status %s\nexpires %s\n", s.User.Status, printTime(s.User.ExpiresAt))
	if s.User.MaxDevices > 0 {
		// Devices for a key bound to machines; seats (machines running at
		// once) for a floating key. The client wire does not say which.
		fmt.Fprintf(w, "max_devices %d\n", s.User.MaxDevices)
	}
	printTrust(w, s.Verdict(nil))
}

// printTrust prints the signed offline trust an answer left the client
// with (pinned keys and an app with offline trust on), if any.
func printTrust(w io.Writer, v client.Verdict) {
	if !v.Until.IsZero() {
		fmt.Fprintf(w, "trust_until %s\n", printTime(&v.Until))
	}
}

type clientLoginCmd struct {
	clientConn `embed:""`
	clientKey  `embed:""`
	clientHWID `embed:""`
	Keep       bool `name:"keep" env:"KEYWARD_CLIENT_KEEP" help:"Do not sign out (the session stays open until it times out)."`
}

// login signs key in from hwid over conn and prints the session; a refusal
// is already turned into the command's exit (nil session).
func login(e *env, k *kong.Context, conn clientConn, key, hwid string) (*client.Session, error) {
	cl, err := conn.client(e)
	if err != nil {
		return nil, err
	}
	s, err := cl.Login(e.ctx, key, hwid)
	if err != nil {
		return nil, clientExit(k, e, err, false)
	}
	printSession(e.stdout, s)
	return s, nil
}

func (c *clientLoginCmd) Run(e *env, k *kong.Context) error {
	s, err := login(e, k, c.clientConn, c.Key, c.value())
	if s == nil {
		return err
	}
	if !c.Keep {
		return clientExit(k, e, s.Logout(e.ctx), true)
	}
	return nil
}

type clientHeartbeatCmd struct {
	clientConn `embed:""`
	clientKey  `embed:""`
	clientHWID `embed:""`
	Interval   time.Duration `name:"interval" env:"KEYWARD_CLIENT_INTERVAL" help:"Beat at this interval instead of the server's."`
	Count      int           `name:"count" env:"KEYWARD_CLIENT_COUNT" help:"Stop (and sign out) after this many beats; 0: run until killed or interrupted."`
}

func (c *clientHeartbeatCmd) Run(e *env, k *kong.Context) error {
	s, err := login(e, k, c.clientConn, c.Key, c.value())
	if s == nil {
		return err
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	n := 0
	err = s.Run(ctx, client.HeartbeatOptions{
		Interval: c.Interval,
		OnEvent: func(ev client.Event) {
			line := "beat " + string(ev.Kind)
			switch ev.Kind {
			case client.EventKill:
				line = "kill " + ev.Code
			case client.EventTransient:
				line += " " + ev.Code
			case client.EventUnanswered:
				line += fmt.Sprintf(" %d/%d", ev.Unanswered, client.MaxUnanswered)
			case client.EventRateLimited:
				line += fmt.Sprintf(" %d/%d", ev.RateLimited, client.MaxRateLimited)
			case client.EventGrace:
				line += " until " + printTime(&ev.GraceUntil)
			}
			if ev.Err != nil && ev.Kind != client.EventKill {
				line += ": " + ev.Err.Error()
			}
			fmt.Fprintln(e.stdout, line)
			if n++; c.Count > 0 && n >= c.Count {
				cancel()
			}
		},
	})
	if client.IsKill(err) {
		return clientExit(k, e, err, true)
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer lcancel()
	if lerr := s.Logout(lctx); lerr != nil {
		printError(e.stderr, fmt.Errorf("logout: %s", strings.TrimPrefix(lerr.Error(), "keyward: ")))
	}
	fmt.Fprintln(e.stdout, "stopped")
	return nil
}

type clientCheckCmd struct {
	clientConn `embed:""`
	clientKey  `embed:""`
}

func (c *clientCheckCmd) Run(e *env, k *kong.Context) error {
	cl, err := c.client(e)
	if err != nil {
		return err
	}
	st, err := cl.CheckKey(e.ctx, c.Key)
	if err != nil {
		return clientExit(k, e, err, false)
	}
	fmt.Fprintf(e.stdout, "valid %v\nstatus %s\ntype %s\nexpires %s\nmax_devices %d\n",
		st.Valid, st.Key.Status, st.Key.KeyType, keyExpiry(st.Key), st.Key.MaxDevices)
	printTrust(e.stdout, cl.Verdict(c.Key, nil))
	if !st.Valid {
		k.Exit(exitClientRefused)
	}
	return nil
}

type clientTrialCmd struct {
	clientConn `embed:""`
	clientHWID `embed:""`
}

func (c *clientTrialCmd) Run(e *env, k *kong.Context) error {
	cl, err := c.client(e)
	if err != nil {
		return err
	}
	tr, err := cl.StartTrial(e.ctx, c.value())
	if err != nil {
		return clientExit(k, e, err, false)
	}
	fmt.Fprintf(e.stdout, "trial %s\nexpires %s\nresumed %v\n", tr.Key, printTime(tr.ExpiresAt), tr.Resumed)
	return clientExit(k, e, tr.Logout(e.ctx), true)
}

type clientUpdateFlags struct {
	clientConn `embed:""`
	Version    string `name:"version" required:"" env:"KEYWARD_CLIENT_VERSION" help:"The running version (semver)."`
	Channel    string `name:"channel" env:"KEYWARD_CLIENT_CHANNEL" help:"stable (default), beta or alpha."`
	OS         string `name:"os" env:"KEYWARD_CLIENT_OS" help:"windows, macos or linux."`
	Arch       string `name:"arch" env:"KEYWARD_CLIENT_ARCH" help:"x64, x86 or arm64."`
	Key        string `name:"key" env:"KEYWARD_CLIENT_KEY" help:"Licence key (rollout bucketing)."`
	HWID       string `name:"hwid" env:"KEYWARD_CLIENT_HWID" help:"Device id (rollout bucketing)."`
}

func (c clientUpdateFlags) check(e *env) (*client.Client, *client.UpdateOffer, error) {
	cl, err := c.client(e)
	if err != nil {
		return nil, nil, err
	}
	o, err := cl.CheckUpdate(e.ctx, client.UpdateRequest{Version: c.Version, Channel: c.Channel, OS: c.OS, Arch: c.Arch,
		LicenseKey: c.Key, HWID: c.HWID})
	return cl, o, err
}

func printOffer(w io.Writer, o *client.UpdateOffer) {
	fmt.Fprintf(w, "update %s\nmandatory %v\nsize %d\nsha256 %s\nurl %s\n", o.Version, o.Mandatory, o.Size, o.SHA256, o.DownloadURL)
}

type clientUpdateCheckCmd struct {
	clientUpdateFlags `embed:""`
}

func (c *clientUpdateCheckCmd) Run(e *env, k *kong.Context) error {
	_, o, err := c.check(e)
	if err != nil {
		return clientExit(k, e, err, false)
	}
	if o == nil {
		fmt.Fprintln(e.stdout, "up to date")
		return nil
	}
	printOffer(e.stdout, o)
	return nil
}

type clientUpdateDownloadCmd struct {
	clientUpdateFlags `embed:""`
	Out               string `name:"out" short:"o" env:"KEYWARD_CLIENT_OUT" help:"File to write (default: update-<version>.bin); an existing <out>.part is resumed."`
}

func (c *clientUpdateDownloadCmd) Run(e *env, k *kong.Context) error {
	cl, o, err := c.check(e)
	if err != nil {
		return clientExit(k, e, err, false)
	}
	if o == nil {
		fmt.Fprintln(e.stdout, "up to date")
		return nil
	}
	printOffer(e.stdout, o)
	out := c.Out
	if out == "" {
		out = "update-" + o.Version + ".bin"
	}
	if err := cl.DownloadFile(e.ctx, o, out); err != nil {
		return clientExit(k, e, err, false)
	}
	fmt.Fprintf(e.stdout, "saved %s\n", out)
	return nil
}
