package license

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/wire"
)

// ImportReport is what an import of a key CSV found and did. Rows counts
// the data rows read, Valid those without a problem; ToInsert is what
// applying inserts: every valid row when the file has no problem, else
// none (an import is all or nothing). Errors lists the problems (at most
// 1000; ErrorCount counts all) with their line numbers.
type ImportReport struct {
	DryRun     bool           `json:"dry_run"`
	Rows       int            `json:"rows"`
	Valid      int            `json:"valid"`
	ToInsert   int            `json:"to_insert"`
	Devices    int            `json:"devices"`
	ByStatus   map[Status]int `json:"by_status"`
	Imported   int            `json:"imported"`
	ErrorCount int            `json:"error_count"`
	Errors     []ImportError  `json:"errors"`
}

// CodeImportRejected is the refusal of an import whose file has problems;
// the reply carries the report.
const CodeImportRejected = wire.CodeImportRejected

// ImportKeys reads a key CSV (see ParseKeyCSV) for app appID and checks
// every row, including key strings the app already has (or had, before a
// rotation). With apply false it only reports. With apply true it inserts
// every key with its bound devices and one key.import audit entry in one
// transaction, or, when any row has a problem, nothing: IMPORT_REJECTED
// (400) carrying the report. Imported devices are bound at the import
// time, a millisecond apart in file order, so they list in that order.
func (s *Service) ImportKeys(ctx context.Context, actor audit.Actor, appID string, r io.Reader, apply bool) (*ImportReport, error) {
	app, err := s.App(ctx, appID)
	if err != nil {
		return nil, err
	}
	p := ParseKeyCSV(r)
	for _, row := range p.Rows {
		if err := app.checkFlagTypes("features", row.Key.Features); err != nil {
			p.fail(row.Line, "features", "%s", apperr.From(err).Message)
		}
	}
	if err := s.markTaken(ctx, s.store.TakenKeyStrings, appID, p); err != nil {
		return nil, err
	}
	rep := report(p, !apply)
	if !apply {
		return rep, nil
	}
	if rep.ErrorCount > 0 {
		return nil, rejected(rep)
	}
	now := s.Now()
	keys := make([]Key, len(p.Rows))
	for i, row := range p.Rows {
		row.Complete(now)
		k := row.Key
		k.AppID, k.UpdatedAt = app.ID, now
		keys[i] = k
	}
	err = s.store.InTx(ctx, func(tx Tx) error {
		if err := s.markTaken(ctx, tx.TakenKeyStrings, appID, p); err != nil { // a key added since the check
			return err
		}
		if p.ErrorCount > 0 {
			return rejected(report(p, false))
		}
		if err := tx.InsertKeys(ctx, keys); err != nil {
			return err
		}
		for i, row := range p.Rows {
			for j, h := range row.HWIDs {
				if err := tx.UpsertDevice(ctx, keys[i].ID, h, now.Add(time.Duration(j)*time.Millisecond)); err != nil {
					return err
				}
			}
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "key.import", app.ID, fmt.Sprintf("%d keys", len(keys)),
			map[string]any{"count": len(keys), "devices": rep.Devices, "by_status": rep.ByStatus}))
	})
	if err != nil {
		return nil, err
	}
	rep.Imported = len(keys)
	return rep, nil
}

// markTaken reports the rows whose key string the app already uses.
func (s *Service) markTaken(ctx context.Context, taken func(context.Context, string, []string) ([]string, error), appID string, p *ParsedCSV) error {
	strs := make([]string, len(p.Rows))
	for i, row := range p.Rows {
		strs[i] = row.Key.LicenseKey
	}
	used, err := taken(ctx, appID, strs)
	if err != nil || len(used) == 0 {
		return err
	}
	set := make(map[string]bool, len(used))
	for _, u := range used {
		set[u] = true
	}
	kept := p.Rows[:0]
	for _, row := range p.Rows {
		if set[row.Key.LicenseKey] {
			p.fail(row.Line, "license_key", "the app already has key %s", row.Key.LicenseKey)
			continue
		}
		kept = append(kept, row)
	}
	p.Rows = kept
	sort.SliceStable(p.Errors, func(i, j int) bool { return p.Errors[i].Line < p.Errors[j].Line })
	return nil
}

func report(p *ParsedCSV, dry bool) *ImportReport {
	rep := &ImportReport{DryRun: dry, Rows: p.DataRows, ErrorCount: p.ErrorCount, Errors: p.Errors, ByStatus: map[Status]int{}}
	if rep.Errors == nil {
		rep.Errors = []ImportError{}
	}
	for _, row := range p.Rows {
		if p.bad[row.Line] { // a row can carry several problems
			continue
		}
		rep.Valid++
		rep.Devices += len(row.HWIDs)
		rep.ByStatus[row.Key.Status]++
	}
	if rep.ErrorCount == 0 {
		rep.ToInsert = rep.Valid
	}
	return rep
}

func rejected(rep *ImportReport) error {
	return apperr.New(apperr.Invalid, CodeImportRejected,
		fmt.Sprintf("The file has %d problems; nothing was imported. Fix them and import again.", rep.ErrorCount)).
		With("report", rep)
}
