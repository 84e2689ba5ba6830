package client

import (
	"context"
	"errors"
	"time"

	"github.com/keyward/keyward/wire"
)

// Failure budgets of the heartbeat loop (sdk-compat §2.2).
const (
	// MaxUnanswered consecutive beats without an enveloped answer (no reply,
	// plain refusal, forged or unverifiable reply) end the session with
	// NETWORK_LOST — or CLOCK_SKEW when all of them were clock refusals.
	MaxUnanswered = 3
	// MaxRateLimited consecutive plain 429 answers end it with NETWORK_LOST.
	MaxRateLimited = 10
)

// EventKind names what happened on one beat.
type EventKind string

// Event kinds reported to HeartbeatOptions.OnEvent.
const (
	EventOK          EventKind = "ok"           // enveloped success
	EventTransient   EventKind = "transient"    // enveloped refusal with a non-kill code (e.g. RATE_LIMITED): answered, keep beating
	EventUnanswered  EventKind = "unanswered"   // no usable answer; counts toward MaxUnanswered
	EventRateLimited EventKind = "rate_limited" // plain 429; counts toward MaxRateLimited
	EventKill        EventKind = "kill"         // the session ended; Code says why
	// EventGrace: a failure budget ran out with the server unreachable, and
	// the newest signed reply's trust_until (Event.GraceUntil) keeps the
	// session running; every beat until the server answers is one.
	EventGrace EventKind = "grace"
	// EventRelogin: the first answer after a grace was SESSION_EXPIRED (the
	// session timed out on the server during the outage), and the loop
	// signed in again with the same key and device: Session.ID is new.
	EventRelogin EventKind = "relogin"
)

// Event describes one beat of the loop.
type Event struct {
	Kind EventKind
	Code string // error code of the answer, or the kill code
	// Unanswered and RateLimited are the budgets' counters after this beat.
	Unanswered  int
	RateLimited int
	// ClockOffset is the client's clock correction after this beat.
	ClockOffset time.Duration
	// GraceUntil is when the grace ends (EventGrace only).
	GraceUntil time.Time
	Err        error // the failure, if any
}

// HeartbeatOptions configure Session.Run.
type HeartbeatOptions struct {
	// OnKill is called once with the code that ends the session: one of
	// the eight server kill codes, NETWORK_LOST, CLOCK_SKEW or
	// CLOCK_ROLLBACK. Stop using the licensed features when it is called.
	OnKill func(code string)
	// OnEvent, when set, is called after every beat.
	OnEvent func(Event)
	// Interval overrides the server's heartbeat_interval (0: the server's).
	// Beating faster gains nothing; the server rate-limits each session.
	Interval time.Duration
	// Immediate sends the first beat at once instead of one interval after
	// Run starts.
	Immediate bool
}

// Beat sends one heartbeat. nil means the server answered success; an
// enveloped *APIError with a kill code (IsKill) means the session is over;
// anything else is transient.
func (s *Session) Beat(ctx context.Context) error {
	_, err := s.c.do(ctx, call{method: "POST", path: "/api/auth/heartbeat.php", kind: envelopeCall,
		body: wire.HeartbeatRequest{SessionID: s.ID, LicenseKey: s.LicenseKey, HWID: s.HWID}}, nil)
	return err
}

// Run keeps the session alive, beating every interval until the context
// ends (it then returns ctx.Err()) or the session ends: OnKill is called and
// Run returns a *KillError. Only enveloped answers count as answered: after
// MaxUnanswered consecutive beats without one the session ends with
// NETWORK_LOST (CLOCK_SKEW when each was a clock refusal the automatic
// correction could not fix), after MaxRateLimited consecutive plain 429s
// with NETWORK_LOST. The two budgets do not reset each other; an enveloped
// answer resets both. Unknown codes are transient.
//
// Outage grace: when a budget runs out with the server unreachable (no
// answer, timeouts, 5xx, plain 429s, replies that cannot be trusted — not
// clock or other plain refusals), and the client holds a signed
// trust_until for the session's key (pinned keys, offline trust on), the
// session goes on: each such beat is an EventGrace until the server
// answers again (an OK ends the grace; a kill code ends the session at
// once) or trust_until passes (NETWORK_LOST, wrapping ErrGraceExpired). A
// clock turned back ends it with CLOCK_ROLLBACK (ErrClockRollback). An
// outage longer than the server's session timeout ends the session on the
// server; so when the first answer after a grace is SESSION_EXPIRED, Run
// signs in again once with the session's key and device (a key session
// only; an account session ends as before): success is an EventRelogin and Session.ID changes (read it from
// OnEvent, or after Run returns); a refusal of that login (BANNED, …) ends
// the session with its code.
func (s *Session) Run(ctx context.Context, o HeartbeatOptions) error {
	d := o.Interval
	if d <= 0 {
		d = s.Interval
	}
	if d <= 0 {
		d = 30 * time.Second
	}
	ticks, stop := s.c.tick(d)
	defer stop()
	var b budget
	first := o.Immediate
	inGrace := false // an EventGrace since the last OK
	for {
		if !first {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-ticks:
			}
		}
		first = false
		err := s.Beat(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ev, kill := b.classify(err)
		if kill != nil && kill.Code == CodeSessionExpired && inGrace && s.LicenseKey != "" && s.User.Username == "" {
			ev, kill = s.relogin(ctx, ev, err)
		}
		if kill != nil && kill.Code == CodeNetworkLost && unreachable(err) {
			switch v := s.Verdict(err); v.Status {
			case Grace:
				ev.Kind, ev.Code, ev.GraceUntil, kill = EventGrace, "", v.Until, nil
			case Refused:
				if !errors.Is(v.Err, ErrNoTrust) { // trust ran out, or the clock was turned back
					kill = &KillError{Code: v.Code, Message: graceMessage(v.Code), Err: v.Err}
					ev.Code, ev.Err = v.Code, v.Err
				}
			}
		}
		switch ev.Kind {
		case EventGrace:
			inGrace = true
		case EventOK:
			inGrace = false
		}
		ev.ClockOffset = s.c.ClockOffset()
		if kill != nil {
			s.c.log.Warn("keyward: session ended", "code", kill.Code, "err", kill.Err)
		} else if err != nil {
			s.c.log.Debug("keyward: heartbeat failed", "kind", ev.Kind, "err", err)
		}
		if o.OnEvent != nil {
			o.OnEvent(ev)
		}
		if kill != nil {
			if o.OnKill != nil {
				o.OnKill(kill.Code)
			}
			return kill
		}
	}
}

// relogin signs the session's key in again after the session expired on
// the server during an outage. ev and the kill are those of the
// SESSION_EXPIRED beat (cause).
func (s *Session) relogin(ctx context.Context, ev Event, cause error) (Event, *KillError) {
	ns, err := s.c.Login(ctx, s.LicenseKey, s.HWID)
	if err == nil {
		s.ID = ns.ID
		s.c.log.Info("keyward: signed in again after an outage", "code", CodeSessionExpired)
		ev.Kind, ev.Err = EventRelogin, cause
		return ev, nil
	}
	switch v := s.Verdict(err); v.Status {
	case Grace: // the server went away again: still in grace, retried at the next beat
		ev.Kind, ev.Code, ev.GraceUntil, ev.Err = EventGrace, "", v.Until, err
		return ev, nil
	default:
		ev.Kind, ev.Code, ev.Err = EventKill, v.Code, err
		return ev, &KillError{Code: v.Code, Message: "signing in again after the outage was refused", Err: err}
	}
}

// unreachable reports whether a beat's failure says nothing from the
// server: no answer, a 5xx, a rate limit, a reply that could not be trusted
// — anything but a plain 4xx refusal (the server's own word about the
// request: a bad secret, a revoked app, the clock).
func unreachable(err error) bool {
	var api *APIError
	if !errors.As(err, &api) {
		return true
	}
	return api.Status >= 500 || api.Status == 429 || api.Sealed
}

func graceMessage(code string) string {
	if code == CodeClockRollback {
		return "this computer's clock was turned back; the licence server must be reached"
	}
	return "the licence server has been unreachable for longer than the offline grace"
}

// budget holds the loop's two failure counters.
type budget struct {
	unanswered  int
	clockOnly   bool // every unanswered beat of the streak was a clock refusal
	rateLimited int
}

// classify accounts for one beat's outcome.
func (b *budget) classify(err error) (Event, *KillError) {
	ev := Event{Err: err}
	var api *APIError
	isAPI := errors.As(err, &api)
	switch {
	case err == nil:
		b.unanswered, b.rateLimited, b.clockOnly = 0, 0, false
		ev.Kind = EventOK
	case isAPI && api.Sealed:
		b.unanswered, b.rateLimited, b.clockOnly = 0, 0, false
		ev.Code = api.Code
		if IsKillCode(api.Code) {
			ev.Kind = EventKill
			ev.Unanswered, ev.RateLimited = b.unanswered, b.rateLimited
			return ev, &KillError{Code: api.Code, Message: api.Message}
		}
		ev.Kind = EventTransient
	case isAPI && api.Status == 429:
		b.rateLimited++
		ev.Kind, ev.Code = EventRateLimited, api.Code
		if b.rateLimited >= MaxRateLimited {
			ev.Kind, ev.Code = EventKill, CodeNetworkLost
			ev.Unanswered, ev.RateLimited = b.unanswered, b.rateLimited
			return ev, &KillError{Code: CodeNetworkLost, Message: "the server kept refusing heartbeats (rate limited)", Err: err}
		}
	default:
		clock := isAPI && api.ClockRefusal()
		if b.unanswered == 0 {
			b.clockOnly = clock
		} else {
			b.clockOnly = b.clockOnly && clock
		}
		b.unanswered++
		ev.Kind = EventUnanswered
		if isAPI {
			ev.Code = api.Code
		}
		if b.unanswered >= MaxUnanswered {
			code, msg := CodeNetworkLost, "no answer from the licence server"
			if b.clockOnly {
				code, msg = CodeClockSkew, "the licence server keeps refusing this computer's clock"
			}
			ev.Kind, ev.Code = EventKill, code
			ev.Unanswered, ev.RateLimited = b.unanswered, b.rateLimited
			return ev, &KillError{Code: code, Message: msg, Err: err}
		}
	}
	ev.Unanswered, ev.RateLimited = b.unanswered, b.rateLimited
	return ev, nil
}
