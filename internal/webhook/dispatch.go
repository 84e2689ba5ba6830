package webhook

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyward/keyward/internal/event"
)

// Result is what a Sender reports of one attempt.
type Result struct {
	StatusCode int
	Body       []byte // at most the first 2 KB
	Err        error  // no answer: refused, timed out, redirect refused, …
	Duration   time.Duration
}

// OK reports whether the attempt succeeded: a 2xx or 3xx answer.
func (r Result) OK() bool { return r.Err == nil && r.StatusCode >= 200 && r.StatusCode < 400 }

// Sender posts one signed body; it must bound the answer time itself.
type Sender interface {
	Send(ctx context.Context, url string, headers map[string]string, body []byte) Result
}

// Schedule is the waits before attempts 2, 3, …; its length + 1 is the
// number of attempts.
type Schedule []time.Duration

// DefaultSchedule: 1 min, 5 min, 30 min, 2 h, 6 h (attempts 2–6).
var DefaultSchedule = Schedule{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}

// PauseAfter is how many failed attempts in a row pause a destination.
const PauseAfter = 20

// DispatchConfig tunes a Dispatcher; zero values take the defaults.
type DispatchConfig struct {
	Schedule    Schedule
	Concurrency int // deliveries sent at once, by all workers together (default 8)
	Batch       int // deliveries claimed per round, by one worker (default 32)
	// Workers is how many batches Run has in hand at once (default 2): while
	// one batch's attempts are being recorded, another is claimed and sent.
	Workers int
	Lease   time.Duration // how long a claimed delivery is held (default below)
	// Timeout is the Sender's answer timeout (default 5 s). The default
	// lease covers sending every worker's batch at it twice over (they
	// share the Concurrency), and at least a minute, so no other process
	// takes a delivery still being sent.
	Timeout time.Duration
	// OnAttempt, when set, is told of every recorded attempt's outcome:
	// Succeeded, "retry" (pending again) or Failed (no retry left).
	OnAttempt func(outcome string)
}

// Dispatcher fans events out into deliveries and sends the due ones. Several
// dispatchers (processes) share the work through row locks and leases.
type Dispatcher struct {
	store Store
	send  Sender
	now   func() time.Time
	rand  io.Reader
	log   *slog.Logger
	cfg   DispatchConfig
	// analyzed is when Store.Analyze last ran (Unix ns of the clock).
	analyzed atomic.Int64
	// sem holds a slot per send in flight, shared by every worker.
	sem chan struct{}
}

// A fan-out of at least AnalyzeAfter deliveries has the store analyze its
// queue, at most once per AnalyzeEvery per dispatcher.
const (
	AnalyzeAfter = 1000
	AnalyzeEvery = 10 * time.Second
)

// NewDispatcher returns a Dispatcher.
func NewDispatcher(store Store, send Sender, now func() time.Time, rand io.Reader, log *slog.Logger, cfg DispatchConfig) *Dispatcher {
	if cfg.Schedule == nil {
		cfg.Schedule = DefaultSchedule
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 32
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Lease <= 0 {
		rounds := (cfg.Workers*cfg.Batch + cfg.Concurrency - 1) / cfg.Concurrency
		cfg.Lease = max(time.Minute, 2*time.Duration(rounds)*cfg.Timeout)
	}
	return &Dispatcher{store: store, send: send, now: now, rand: rand, log: log, cfg: cfg, sem: make(chan struct{}, cfg.Concurrency)}
}

func (d *Dispatcher) clock() time.Time { return d.now().UTC() }

// Run fans out new events and sends due deliveries until none is left due;
// the sweep job calls it every second. Its Workers each claim, send and
// record batches until one finds nothing due, so one batch is claimed and
// sent while another's attempts are recorded; a worker goes on after a
// part batch too: a delivery that succeeded may have let the next one of
// its subject go. Run returns once every worker stopped, with the first
// error.
func (d *Dispatcher) Run(ctx context.Context) error {
	if err := d.FanOut(ctx); err != nil {
		return err
	}
	errs := make(chan error, d.cfg.Workers)
	for range d.cfg.Workers {
		go func() {
			for {
				n, err := d.SendDue(ctx)
				if err != nil || n == 0 {
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for range d.cfg.Workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// EventID is the body's "id" of outbox event id: the same for every
// destination, retry and redelivery of the event.
func EventID(id int64) string { return "evt_" + strconv.FormatInt(id, 10) }

// body is the JSON a destination receives for an event as its seq-th
// delivery, bytes signed exactly as sent.
func body(ev event.Event, seq int64) []byte {
	data := ev.Data
	if data == nil {
		data = map[string]any{}
	}
	b, _ := json.Marshal(map[string]any{"id": EventID(ev.ID), "sequence": seq, "event": ev.Type,
		"timestamp": ev.CreatedAt.UTC().Format(time.RFC3339), "data": data})
	return b
}

func newDelivery(id string, dest *Destination, ev event.Event, seq int64, now time.Time) *Delivery {
	return &Delivery{ID: id, DestinationID: dest.ID, EventID: ev.ID, AppID: ev.AppID, Event: ev.Type, Body: body(ev, seq),
		Status: Pending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now, Subject: ev.Subject, Sequence: seq}
}

// FanOut turns events not yet dispatched into one delivery per enabled
// destination that wants them, numbered per destination in event order.
//
// Order per subject rests on two things. Event ids follow the order of the
// changes of one subject: every change locks the subject's row (the key,
// order, …) before writing its event, so of two transactions touching one
// key the later one inserts its event — and on PostgreSQL draws its id,
// assigned at insert, not at commit — only after the earlier one
// committed. And fan-outs take turns: each locks the enabled destinations
// before reading events, so no fan-out in another process can insert a
// later event's delivery before an earlier event's, and each destination's
// sequence (advanced in the same transaction) follows event order.
func (d *Dispatcher) FanOut(ctx context.Context) error {
	for {
		var n, queued int
		err := d.store.InTx(ctx, func(tx Tx) error {
			// Idle rounds lock nothing.
			if waiting, err := tx.HasUndispatched(ctx); err != nil || !waiting {
				return err
			}
			dests, err := tx.EnabledDestinations(ctx) // taken before the events: see above
			if err != nil {
				return err
			}
			evs, err := tx.UndispatchedEvents(ctx, 500)
			if err != nil || len(evs) == 0 {
				return err
			}
			n = len(evs)
			// Who gets what, then one counter update per destination.
			wants := make([][]int, len(dests)) // event indexes per destination
			ids := make([]int64, 0, len(evs))
			for j, ev := range evs {
				ids = append(ids, ev.ID)
				for i := range dests {
					dest := &dests[i]
					if (dest.AppID != "" && dest.AppID != ev.AppID) || !dest.Wants(ev.Type) {
						continue
					}
					wants[i] = append(wants[i], j)
				}
			}
			now := d.clock()
			var dels []*Delivery
			for i, js := range wants {
				if len(js) == 0 {
					continue
				}
				last, err := tx.AdvanceSequence(ctx, dests[i].ID, len(js))
				if err != nil {
					return err
				}
				seq := last - int64(len(js))
				for _, j := range js {
					seq++
					id, err := NewDeliveryID(d.rand)
					if err != nil {
						return err
					}
					dels = append(dels, newDelivery(id, &dests[i], evs[j], seq, now))
				}
			}
			if err := tx.InsertDeliveries(ctx, dels); err != nil {
				return err
			}
			queued = len(dels)
			return tx.MarkDispatched(ctx, ids, now)
		})
		if err == nil && queued >= AnalyzeAfter {
			d.analyze(ctx)
		}
		if err != nil || n < 500 {
			return err
		}
	}
}

// analyze runs Store.Analyze unless it ran less than AnalyzeEvery ago; a
// failure is logged, the claims go on with what the planner knew.
func (d *Dispatcher) analyze(ctx context.Context) {
	now := d.clock().UnixNano()
	last := d.analyzed.Load()
	if now-last < int64(AnalyzeEvery) || !d.analyzed.CompareAndSwap(last, now) {
		return
	}
	if err := d.store.Analyze(ctx); err != nil {
		d.log.WarnContext(ctx, "analyze webhook deliveries", "err", err)
	}
}

// SendDue claims up to a batch of due deliveries, sends them with bounded
// concurrency and records the attempts, all in one transaction once the
// batch is sent; it returns how many it claimed. A process that stops
// between the sends and the record leaves the batch leased: it is sent
// again, with the same X-Webhook-Id, once the lease expires, as after a
// crash mid-send.
func (d *Dispatcher) SendDue(ctx context.Context) (int, error) {
	var batch []Delivery
	now := d.clock()
	err := d.store.InTx(ctx, func(tx Tx) error {
		due, err := tx.DueDeliveries(ctx, now, d.cfg.Batch)
		if err != nil || len(due) == 0 {
			return err
		}
		ids := make([]string, len(due))
		for i := range due {
			ids[i] = due[i].ID
			due[i].Attempts++
			due[i].LockedUntil, due[i].UpdatedAt = now.Add(d.cfg.Lease), now
		}
		if err := tx.LeaseDeliveries(ctx, ids, now.Add(d.cfg.Lease), now); err != nil {
			return err
		}
		batch = due
		return nil
	})
	if err != nil || len(batch) == 0 {
		return 0, err
	}
	sem := d.sem
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := make([]sent, 0, len(batch))
	for i := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func(del *Delivery) {
			defer func() { <-sem; wg.Done() }()
			s := d.attempt(ctx, del)
			mu.Lock()
			done = append(done, s)
			mu.Unlock()
		}(&batch[i])
	}
	wg.Wait()
	d.record(ctx, done)
	return len(batch), nil
}

// sent is an attempt made and not yet recorded.
type sent struct {
	del *Delivery
	a   Attempt
	ok  bool
}

// attempt sends one claimed delivery.
func (d *Dispatcher) attempt(ctx context.Context, del *Delivery) sent {
	at := d.clock()
	res := d.send.Send(ctx, del.URL, Headers(del.ID, del.Secret, del.Attempts, at, del.Body), del.Body)
	a := Attempt{Attempt: del.Attempts, At: at, StatusCode: res.StatusCode, Duration: res.Duration, Response: string(res.Body)}
	if res.Err != nil {
		a.Error = res.Err.Error()
	}
	return sent{del: del, a: a, ok: res.OK()}
}

// record logs the attempts made, in the order they ended, and applies their
// outcomes in one transaction: each delivery succeeded, pending again after
// its wait or failed, and each destination's failures in a row counted
// (reset by a success, pausing it at PauseAfter) as if the attempts had
// been recorded one by one. A delivery or destination deleted meanwhile is
// skipped.
func (d *Dispatcher) record(ctx context.Context, done []sent) {
	ctx = context.WithoutCancel(ctx) // an attempt made is recorded, even during shutdown
	var outcomes []string
	err := d.store.InTx(ctx, func(tx Tx) error {
		outcomes = outcomes[:0]
		ids := make([]string, len(done))
		for i, s := range done {
			ids[i] = s.del.ID
		}
		curs, err := tx.DeliveriesForUpdate(ctx, ids)
		if err != nil {
			return err
		}
		byID := make(map[string]*Delivery, len(curs))
		for i := range curs {
			byID[curs[i].ID] = &curs[i]
		}
		now := d.clock()
		logged := make([]DeliveryAttempt, 0, len(curs))
		changed := make([]*Delivery, 0, len(curs))
		var destIDs []int64
		for _, s := range done {
			cur := byID[s.del.ID]
			if cur == nil {
				continue // deleted with its destination
			}
			logged = append(logged, DeliveryAttempt{DeliveryID: cur.ID, Attempt: s.a})
			cur.LockedUntil, cur.UpdatedAt = time.Time{}, now
			var outcome string
			if s.ok {
				cur.Status, outcome = Succeeded, Succeeded
			} else if cur.Attempts > len(d.cfg.Schedule) {
				cur.Status, outcome = Failed, Failed
			} else {
				cur.Status, cur.NextAttemptAt = Pending, now.Add(d.jitter(d.cfg.Schedule[cur.Attempts-1]))
				outcome = "retry"
			}
			outcomes = append(outcomes, outcome)
			changed = append(changed, cur)
			if !slices.Contains(destIDs, cur.DestinationID) {
				destIDs = append(destIDs, cur.DestinationID)
			}
		}
		if err := tx.AddAttempts(ctx, logged); err != nil {
			return err
		}
		if err := tx.UpdateDeliveries(ctx, changed); err != nil {
			return err
		}
		dests, err := tx.DestinationsForUpdate(ctx, destIDs)
		if err != nil {
			return err
		}
		byDest := make(map[int64]*Destination, len(dests))
		for i := range dests {
			byDest[dests[i].ID] = &dests[i]
		}
		dirty := make(map[int64]bool, len(dests))
		for _, s := range done {
			dest := byDest[s.del.DestinationID]
			if dest == nil || byID[s.del.ID] == nil {
				continue
			}
			if s.ok {
				dirty[dest.ID] = dirty[dest.ID] || dest.Failures != 0
				dest.Failures = 0
				continue
			}
			dest.Failures++
			dirty[dest.ID] = true
			if dest.Failures >= PauseAfter && dest.PausedAt == nil {
				dest.PausedAt = &now
				d.log.WarnContext(ctx, "webhook destination paused after failures in a row", "webhook_id", dest.ID, "failures", dest.Failures)
			}
		}
		for i := range dests {
			if dirty[dests[i].ID] {
				if err := tx.UpdateDestination(ctx, &dests[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		d.log.ErrorContext(ctx, "record webhook attempts", "deliveries", len(done), "err", err)
		return
	}
	if d.cfg.OnAttempt != nil {
		for _, o := range outcomes {
			d.cfg.OnAttempt(o)
		}
	}
}

// jitter spreads a wait by ±10 %.
func (d *Dispatcher) jitter(w time.Duration) time.Duration {
	var b [8]byte
	if _, err := io.ReadFull(d.rand, b[:]); err != nil {
		return w
	}
	f := float64(binary.BigEndian.Uint64(b[:])>>11) / (1 << 53) // [0, 1)
	return w + time.Duration((f*0.2-0.1)*float64(w))
}
