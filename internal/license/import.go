package license

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/wire"
)

// ImportReport is what an import found and did (see the wire type).
type ImportReport = wire.ImportReport

// CodeImportRejected is the refusal of an import whose file has problems;
// the reply carries the report.
const CodeImportRejected = wire.CodeImportRejected

// maxImportChanges is how many changed keys a report lists (ToUpdate
// counts all).
const maxImportChanges = 1000

// ImportOptions says how ImportKeys reads and applies a file.
type ImportOptions struct {
	// Format is FormatCSV, FormatJSON or "" (detected, see ParseKeys).
	Format string
	// Merge updates keys the app already has instead of refusing them.
	Merge bool
	// Apply changes the app; without it ImportKeys only reports.
	Apply bool
}

// ImportKeys reads a key file (ParseKeys) for app appID and checks every
// key, including key strings the app already has (or had, before a
// rotation). Without Merge a key the app has is a problem; with Merge it is
// updated to the file's status, expiry, seats, note and features (only
// the fields the file gives) and its devices in the file are bound in
// addition to those already bound (none are removed); see mergeKey for the
// status rules. Without Apply it only reports, listing per changed key what
// changes. With Apply it inserts the new keys and updates the others, with
// one key.import audit entry counting both, in one transaction, or, when
// any key has a problem, changes nothing: IMPORT_REJECTED (400) carrying
// the report. Status changes take effect as the admin actions do: a ban
// ends the key's sessions with BANNED (so the next heartbeat is refused)
// and emits key.banned. Imported devices are bound at the import time, a
// millisecond apart in file order, so they list in that order.
func (s *Service) ImportKeys(ctx context.Context, actor audit.Actor, appID string, r io.Reader, o ImportOptions) (*ImportReport, error) {
	app, err := s.App(ctx, appID)
	if err != nil {
		return nil, err
	}
	parsed, err := ParseKeys(r, o.Format)
	if err != nil {
		return nil, err
	}
	rows := parsed.Rows[:0]
	for _, row := range parsed.Rows {
		if err := app.checkFlagTypes("features", row.Key.Features); err != nil {
			parsed.failRow(&row, "features", "%s", apperr.From(err).Message)
			continue
		}
		rows = append(rows, row)
	}
	parsed.Rows = rows
	now := s.Now()
	read := importReader{taken: s.store.TakenKeyStrings, key: s.store.Key, devices: s.store.Devices}
	p := parsed.clone()
	plan, err := planImport(ctx, read, appID, p, o.Merge, now)
	if err != nil {
		return nil, err
	}
	rep := plan.report(p, o)
	if !o.Apply {
		return rep, nil
	}
	if rep.ErrorCount > 0 {
		return nil, rejected(rep)
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		// Planned again under row locks: a key added or changed since the dry
		// pass is seen.
		p = parsed.clone()
		read := importReader{taken: tx.TakenKeyStrings, key: tx.KeyForUpdate, devices: tx.Devices}
		if plan, err = planImport(ctx, read, appID, p, o.Merge, now); err != nil {
			return err
		}
		if p.ErrorCount > 0 {
			return rejected(plan.report(p, o))
		}
		keys := make([]Key, len(plan.inserts))
		for i, row := range plan.inserts {
			keys[i] = row.Key
			keys[i].AppID, keys[i].UpdatedAt = appID, now
		}
		if len(keys) > 0 {
			if err := tx.InsertKeys(ctx, keys); err != nil {
				return err
			}
		}
		for i, row := range plan.inserts {
			if err := bindImported(ctx, tx, keys[i].ID, row.HWIDs, now); err != nil {
				return err
			}
		}
		for i := range plan.updates {
			if err := plan.updates[i].apply(ctx, tx, actor, appID, now); err != nil {
				return err
			}
		}
		rep = plan.report(p, o)
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "key.import", appID,
			fmt.Sprintf("%d keys added, %d updated", len(keys), len(plan.updates)),
			map[string]any{"added": len(keys), "updated": len(plan.updates), "unchanged": plan.unchanged,
				"merge": o.Merge, "format": p.Format, "devices": rep.Devices, "by_status": rep.ByStatus}))
	})
	if err != nil {
		return nil, err
	}
	rep.DryRun = false
	rep.Imported, rep.Updated = len(plan.inserts), len(plan.updates)
	return rep, nil
}

func bindImported(ctx context.Context, tx Tx, keyID int64, hwids []string, now time.Time) error {
	for j, h := range hwids {
		if err := tx.UpsertDevice(ctx, keyID, h, now.Add(time.Duration(j)*time.Millisecond)); err != nil {
			return err
		}
	}
	return nil
}

// clone copies p's problems so a plan can add its own to the copy.
func (p *ParsedCSV) clone() *ParsedCSV {
	q := *p
	q.Errors = append([]ImportError(nil), p.Errors...)
	return &q
}

// importReader is what planning an import reads: outside a transaction
// for a dry run, with row locks inside the applying one.
type importReader struct {
	taken   func(ctx context.Context, appID string, strs []string) ([]string, error)
	key     func(ctx context.Context, appID, licenseKey string) (*Key, error)
	devices func(ctx context.Context, keyID int64) ([]Device, error)
}

// importPlan is what applying an import does.
type importPlan struct {
	inserts   []ImportRow
	updates   []keyMerge
	unchanged int
	byStatus  map[string]int // every valid key, by its status after the import
}

// planImport sorts p's valid rows into keys to insert and keys to update;
// a key the app has without merge, the old string of a rotated key, or an
// update the key's state forbids is a problem recorded in p.
func planImport(ctx context.Context, read importReader, appID string, p *ParsedCSV, merge bool, now time.Time) (*importPlan, error) {
	strs := make([]string, len(p.Rows))
	for i, row := range p.Rows {
		strs[i] = row.Key.LicenseKey
	}
	used, err := read.taken(ctx, appID, strs)
	if err != nil {
		return nil, err
	}
	taken := make(map[string]bool, len(used))
	for _, u := range used {
		taken[u] = true
	}
	plan := &importPlan{byStatus: map[string]int{}}
	for i := range p.Rows {
		row := &p.Rows[i]
		if !taken[row.Key.LicenseKey] {
			if len(row.needs) > 0 {
				for _, e := range row.needs {
					p.failRow(row, e.Field, "%s", e.Message)
				}
				continue
			}
			ins := *row
			ins.Complete(now)
			plan.inserts = append(plan.inserts, ins)
			plan.byStatus[string(ins.Key.Status)]++
			continue
		}
		if !merge {
			p.failRow(row, "license_key", "the app already has key %s (import with merge to update it)", row.Key.LicenseKey)
			continue
		}
		k, err := read.key(ctx, appID, row.Key.LicenseKey)
		if errors.Is(err, apperr.ErrNotFound) {
			p.failRow(row, "license_key", "%s is the old string of a key rotated after a suspected leak; it cannot be merged", row.Key.LicenseKey)
			continue
		} else if err != nil {
			return nil, err
		}
		devs, err := read.devices(ctx, k.ID)
		if err != nil {
			return nil, err
		}
		m, field, msg := mergeKey(k, devs, row, now)
		switch {
		case msg != "":
			p.failRow(row, field, "%s", msg)
		case len(m.changes) == 0:
			plan.unchanged++
			plan.byStatus[string(m.next.Status)]++
		default:
			plan.updates = append(plan.updates, m)
			plan.byStatus[string(m.next.Status)]++
		}
	}
	sort.SliceStable(p.Errors, func(i, j int) bool { return p.Errors[i].Line < p.Errors[j].Line })
	return plan, nil
}

// report is the import's report; a file with problems inserts and updates
// nothing.
func (plan *importPlan) report(p *ParsedCSV, o ImportOptions) *ImportReport {
	rep := &ImportReport{DryRun: !o.Apply, Format: p.Format, Merge: o.Merge, Rows: p.DataRows, ErrorCount: p.ErrorCount,
		Errors: p.Errors, ByStatus: plan.byStatus, Changes: []ImportChange{}, Ignored: p.Ignored}
	if rep.Errors == nil {
		rep.Errors = []ImportError{}
	}
	if rep.Ignored == nil {
		rep.Ignored = []string{}
	}
	rep.Valid = len(plan.inserts) + len(plan.updates) + plan.unchanged
	for _, row := range plan.inserts {
		rep.Devices += len(row.HWIDs)
	}
	for _, m := range plan.updates {
		rep.Devices += len(m.addHWIDs)
		if len(rep.Changes) < maxImportChanges {
			rep.Changes = append(rep.Changes, ImportChange{Line: m.row.Line, LicenseKey: m.row.Key.LicenseKey, Fields: m.changes})
		}
	}
	if rep.ErrorCount == 0 {
		rep.ToInsert, rep.ToUpdate, rep.Unchanged = len(plan.inserts), len(plan.updates), plan.unchanged
	} else {
		rep.Devices = 0
	}
	return rep
}

// ImportChange is what a merge changes on one key (see the wire type).
type ImportChange = wire.ImportChange

// FieldChange is one field's change (see the wire type).
type FieldChange = wire.FieldChange

// keyMerge is the planned update of one existing key.
type keyMerge struct {
	row      ImportRow
	next     Key      // the key's fields after the merge
	actions  []string // key actions (ban, unban, pause, resume) in order
	addHWIDs []string
	changes  []FieldChange
}

// mergeKey plans merging row into the existing key k (with its bound
// devices). The file's status wins, with two exceptions that keep what
// happened here: a key activated here stays activated (with its activation
// and expiry) when the file says unused, and a key redeemed onto an
// account here keeps its status unless the file bans it. Reaching the
// file's status goes through the admin actions (unban, resume, ban, pause)
// so their effects apply; a file cannot make a key redeemed. Every field
// changes only when the file gives it (status, key type, duration,
// activation, expiry, seats, note, features); a key made active here
// without an expiry gets the one its duration gives.
// Devices in the file that are not bound are added. A problem is returned
// as field and message.
func mergeKey(k *Key, devs []Device, row *ImportRow, now time.Time) (m keyMerge, field, msg string) {
	m = keyMerge{row: *row, next: *k}
	f := row.Key
	n := &m.next
	tgt := f.Status
	if !row.Has("status") {
		tgt = k.Status
	}
	keepTime := false
	switch {
	case tgt == StatusRedeemed && k.Status != StatusRedeemed:
		return m, "status", fmt.Sprintf("a key becomes redeemed only by redeeming it onto an account; this key is %s", k.Status)
	case k.Status == StatusRedeemed: // its time lives on the account
		keepTime = true
		if tgt != StatusBanned {
			tgt = StatusRedeemed
		}
	case tgt == StatusUnused && k.ActivatedAt != nil:
		tgt, keepTime = k.Status, true // activated here: not undone
	}
	if !keepTime {
		if f.Type != "" {
			n.Type = f.Type
		}
		switch {
		case n.Type == TypeLifetime:
			n.Duration = 0
		case row.Has("duration") || f.Duration > 0:
			n.Duration = f.Duration
		}
		if f.ActivatedAt != nil {
			n.ActivatedAt = f.ActivatedAt
		}
		if row.Has("expires_at") {
			n.ExpiresAt = f.ExpiresAt
		}
		if tgt == StatusExpired && n.ExpiresAt == nil {
			return m, "expires_at", "is required for an expired key"
		}
		if tgt == StatusUnused {
			n.ActivatedAt, n.ExpiresAt = nil, nil
		} else if n.ActivatedAt == nil && (tgt == StatusActive || tgt == StatusExpired) {
			a := now.UTC().Truncate(time.Second)
			n.ActivatedAt = &a
		}
		if n.Type == TypeDays && n.ExpiresAt == nil && n.ActivatedAt != nil {
			if n.Duration == 0 && tgt != StatusPaused && tgt != StatusBanned {
				return m, "expires_at", "is required: the key is active here without an expiry and the file gives no duration"
			}
			if n.Duration > 0 {
				e := n.ActivatedAt.Add(time.Duration(n.Duration) * 24 * time.Hour)
				n.ExpiresAt = &e
			}
		}
		if n.Type == TypeLifetime {
			n.ExpiresAt = nil
		}
	}
	if tgt != k.Status {
		if k.Status == StatusBanned {
			m.actions = append(m.actions, ActionUnban)
		}
		if k.Status == StatusPaused && tgt != StatusBanned {
			m.actions = append(m.actions, ActionResume)
		}
		switch tgt {
		case StatusBanned:
			m.actions = append(m.actions, ActionBan)
		case StatusPaused:
			m.actions = append(m.actions, ActionPause)
		}
	}
	n.Status = tgt
	if row.Has("max_devices") {
		n.MaxDevices = f.MaxDevices
	}
	if row.Has("note") {
		n.Note = f.Note
	}
	if row.Has("features") {
		n.Features = f.Features
	}
	if row.Has("floating") {
		n.Floating = f.Floating
	}
	bound := make(map[string]bool, len(devs))
	for _, d := range devs {
		bound[d.HWID] = true
	}
	for _, h := range row.HWIDs {
		if !bound[h] {
			m.addHWIDs = append(m.addHWIDs, h)
		}
	}

	ch := func(field, old, new string) {
		if old != new {
			m.changes = append(m.changes, FieldChange{Field: field, Old: old, New: new})
		}
	}
	ch("status", string(k.Status), string(n.Status))
	ch("key_type", string(k.Type), string(n.Type))
	ch("duration", strconv.Itoa(k.Duration), strconv.Itoa(n.Duration))
	ch("max_devices", strconv.Itoa(k.MaxDevices), strconv.Itoa(n.MaxDevices))
	ch("activated_at", optStamp(k.ActivatedAt), optStamp(n.ActivatedAt))
	ch("expires_at", optStamp(k.ExpiresAt), optStamp(n.ExpiresAt))
	ch("note", k.Note, n.Note)
	ch("features", string(k.FeaturesJSON()), string(n.FeaturesJSON()))
	ch("floating", strconv.FormatBool(k.Floating), strconv.FormatBool(n.Floating))
	if len(m.addHWIDs) > 0 {
		old := make([]string, len(devs))
		for i, d := range devs {
			old[i] = d.HWID
		}
		m.changes = append(m.changes, FieldChange{Field: "hwids", Old: strings.Join(old, ";"), New: strings.Join(m.addHWIDs, ";")})
	}
	return m, "", ""
}

func optStamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return Timestamp(*t)
}

// apply makes the planned change to the key, read again for update: the
// status actions first (their sessions, events, account grants and audit
// entries, with reason "import"), then the file's fields, then the added
// devices.
func (m *keyMerge) apply(ctx context.Context, tx Tx, actor audit.Actor, appID string, now time.Time) error {
	k, err := tx.KeyForUpdate(ctx, appID, m.row.Key.LicenseKey)
	if err != nil {
		return err
	}
	for _, a := range m.actions {
		if k.Status == StatusRedeemed && a != ActionBan {
			break // an unban gave the key's time back to its account: it stays redeemed
		}
		details := map[string]any{"reason": "import"}
		if err := transition(ctx, appID, a, 0, details, "")(tx, k, now); err != nil {
			return err
		}
		if err := tx.AddAudit(ctx, audit.NewEntry(actor, now, "key."+a, appID, k.LicenseKey, details)); err != nil {
			return err
		}
	}
	n := &m.next
	redeemed := k.Status == StatusRedeemed // an unban gave a redeemed key's time back
	if !redeemed {
		k.Status = n.Status
		k.Type, k.Duration, k.ActivatedAt, k.ExpiresAt = n.Type, n.Duration, n.ActivatedAt, n.ExpiresAt
	}
	k.MaxDevices, k.Note, k.Features, k.Floating, k.UpdatedAt = n.MaxDevices, n.Note, n.Features, n.Floating, now
	if err := tx.UpdateKey(ctx, k); err != nil {
		return err
	}
	return bindImported(ctx, tx, k.ID, m.addHWIDs, now)
}

func rejected(rep *ImportReport) error {
	return apperr.New(apperr.Invalid, CodeImportRejected,
		fmt.Sprintf("The file has %d problems; nothing was imported. Fix them and import again.", rep.ErrorCount)).
		With("report", rep)
}
