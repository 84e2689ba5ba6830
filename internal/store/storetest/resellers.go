package storetest

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/reseller"
	"github.com/keyward/keyward/internal/store"
)

func rsTx(t *testing.T, db *store.DB, fn func(ctx context.Context, tx reseller.Tx) error) {
	t.Helper()
	if err := rsTxErr(db, fn); err != nil {
		t.Fatalf("InResellerTx: %v", err)
	}
}

func rsTxErr(db *store.DB, fn func(ctx context.Context, tx reseller.Tx) error) error {
	ctx := context.Background()
	return db.ResellerStore().InResellerTx(ctx, func(tx reseller.Tx) error { return fn(ctx, tx) })
}

func newReseller(appID, id string) *reseller.Reseller {
	return &reseller.Reseller{ID: id, AppID: appID, Name: "Reseller " + id, Email: id + "@example.com", TokenHint: "kwr_" + id,
		Products: []reseller.Product{{ID: "month", Name: "Month", KeyType: license.TypeDays, Duration: 30, MaxDevices: 2, Price: 4}},
		Status:   reseller.StatusActive, CreatedAt: t0, UpdatedAt: t0}
}

func addReseller(t *testing.T, db *store.DB, appID, id string, balance int64) *reseller.Reseller {
	t.Helper()
	r := newReseller(appID, id)
	r.Balance = balance
	rsTx(t, db, func(ctx context.Context, tx reseller.Tx) error { return tx.InsertReseller(ctx, r, "hash-"+id) })
	return r
}

func testResellerRoundTrip(t *testing.T, db *store.DB) {
	ctx := context.Background()
	rs := db.ResellerStore()
	addApp(t, db, "app")
	addApp(t, db, "other")
	r := addReseller(t, db, "app", "r1", 10)
	addReseller(t, db, "app", "r2", 0)
	addReseller(t, db, "other", "r3", 0)

	want := *r
	want.CreatedAt, want.UpdatedAt = stored(t0), stored(t0)
	got, err := rs.Reseller(ctx, "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("Reseller = %+v, want %+v", *got, want)
	}
	if got, err := rs.ResellerByTokenHash(ctx, "hash-r1"); err != nil || got.ID != "r1" {
		t.Errorf("ResellerByTokenHash = %v, %v; want r1", got, err)
	}
	_, err = rs.Reseller(ctx, "other", "r1")
	wantErr(t, "Reseller of another app", err, apperr.ErrNotFound)
	_, err = rs.ResellerByTokenHash(ctx, "nope")
	wantErr(t, "ResellerByTokenHash unknown", err, apperr.ErrNotFound)
	list, err := rs.Resellers(ctx, "app")
	if err != nil || len(list) != 2 || list[0].ID != "r1" || list[1].ID != "r2" {
		t.Errorf("Resellers(app) = %+v, %v; want r1, r2", list, err)
	}
	if list, err := rs.Resellers(ctx, "none"); err != nil || list == nil || len(list) != 0 {
		t.Errorf("Resellers(none) = %#v, %v; want an empty list", list, err)
	}

	// A token hash is unique.
	dup := newReseller("app", "r4")
	err = rsTxErr(db, func(ctx context.Context, tx reseller.Tx) error { return tx.InsertReseller(ctx, dup, "hash-r1") })
	wantErr(t, "InsertReseller with a taken token hash", err, apperr.ErrConflict)

	// Update changes the profile, not the balance; the token is replaced.
	rsTx(t, db, func(ctx context.Context, tx reseller.Tx) error {
		cur, err := tx.ResellerForUpdate(ctx, "app", "r1")
		if err != nil {
			return err
		}
		cur.Name, cur.Email, cur.Status, cur.Products = "Renamed", "", reseller.StatusDisabled, nil
		cur.Balance, cur.UpdatedAt = 999, t0.Add(1000)
		if err := tx.UpdateReseller(ctx, cur); err != nil {
			return err
		}
		return tx.SetResellerToken(ctx, "r1", "hash-new", "kwr_new", t0.Add(2000))
	})
	got, err = rs.Reseller(ctx, "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Renamed" || got.Email != "" || got.Status != reseller.StatusDisabled || len(got.Products) != 0 || got.Products == nil ||
		got.Balance != 10 || got.TokenHint != "kwr_new" || !got.UpdatedAt.Equal(stored(t0.Add(2000))) {
		t.Errorf("after update: %+v", got)
	}
	if _, err := rs.ResellerByTokenHash(ctx, "hash-r1"); err == nil {
		t.Error("the old token hash still finds the reseller")
	}
	err = rsTxErr(db, func(ctx context.Context, tx reseller.Tx) error {
		_, err := tx.ResellerForUpdate(ctx, "app", "missing")
		return err
	})
	wantErr(t, "ResellerForUpdate missing", err, apperr.ErrNotFound)
	err = rsTxErr(db, func(ctx context.Context, tx reseller.Tx) error { return tx.DeleteReseller(ctx, "missing") })
	wantErr(t, "DeleteReseller missing", err, apperr.ErrNotFound)
}

func testResellerBalance(t *testing.T, db *store.DB) {
	ctx := context.Background()
	rs := db.ResellerStore()
	addApp(t, db, "app")
	addReseller(t, db, "app", "r1", 10)
	addReseller(t, db, "app", "r2", 5)
	type res struct {
		bal int64
		ok  bool
	}
	step := func(fn func(ctx context.Context, tx reseller.Tx) (int64, bool, error)) res {
		t.Helper()
		var out res
		rsTx(t, db, func(ctx context.Context, tx reseller.Tx) error {
			var err error
			out.bal, out.ok, err = fn(ctx, tx)
			return err
		})
		return out
	}
	debit := func(n int64) res {
		return step(func(ctx context.Context, tx reseller.Tx) (int64, bool, error) { return tx.Debit(ctx, "r1", n, t0) })
	}
	credit := func(n, max int64) res {
		return step(func(ctx context.Context, tx reseller.Tx) (int64, bool, error) {
			return tx.Credit(ctx, "r1", n, max, t0)
		})
	}
	for i, c := range []struct {
		got, want res
	}{
		{debit(4), res{6, true}},
		{debit(7), res{0, false}}, // not covered: unchanged
		{debit(6), res{0, true}},  // to exactly zero
		{debit(1), res{0, false}},
		{credit(20, 100), res{20, true}},
		{credit(81, 100), res{0, false}}, // past the cap: unchanged
		{credit(80, 100), res{100, true}},
	} {
		if c.got != c.want {
			t.Errorf("step %d: got %+v, want %+v", i, c.got, c.want)
		}
	}
	if r, _ := rs.Reseller(ctx, "app", "r2"); r.Balance != 5 {
		t.Errorf("another reseller's balance moved to %d", r.Balance)
	}
	// The CHECK constraint backs the conditional update.
	err := rsTxErr(db, func(ctx context.Context, tx reseller.Tx) error {
		_, _, err := tx.Credit(ctx, "r2", -6, 100, t0)
		return err
	})
	if err == nil {
		t.Error("a balance below zero was stored")
	}

	// The ledger: newest first, per reseller or per app, with a cursor.
	var ids []int64
	rsTx(t, db, func(ctx context.Context, tx reseller.Tx) error {
		for i, e := range []reseller.Entry{
			{ResellerID: "r1", At: t0, Delta: 10, BalanceAfter: 10, Reason: reseller.ReasonTopUp, Actor: "admin:admin"},
			{ResellerID: "r2", At: t0, Delta: 5, BalanceAfter: 5, Reason: reseller.ReasonTopUp, Actor: "admin:admin"},
			{ResellerID: "r1", At: t0.Add(1000), Delta: -4, BalanceAfter: 6, Reason: reseller.ReasonGenerate, Detail: "1 × Month",
				Actor: "reseller:Reseller r1"},
		} {
			if err := tx.AddLedger(ctx, &e); err != nil {
				return err
			}
			if e.ID == 0 {
				t.Errorf("entry %d has no ID", i)
			}
			ids = append(ids, e.ID)
		}
		return nil
	})
	es, err := rs.Ledger(ctx, reseller.LedgerFilter{AppID: "app", ResellerID: "r1", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []reseller.Entry{
		{ID: ids[2], ResellerID: "r1", ResellerName: "Reseller r1", At: stored(t0.Add(1000)), Delta: -4, BalanceAfter: 6,
			Reason: reseller.ReasonGenerate, Detail: "1 × Month", Actor: "reseller:Reseller r1"},
		{ID: ids[0], ResellerID: "r1", ResellerName: "Reseller r1", At: stored(t0), Delta: 10, BalanceAfter: 10,
			Reason: reseller.ReasonTopUp, Actor: "admin:admin"},
	}
	if !reflect.DeepEqual(es, want) {
		t.Errorf("Ledger(r1) = %+v, want %+v", es, want)
	}
	es, _ = rs.Ledger(ctx, reseller.LedgerFilter{AppID: "app", Limit: 2})
	if len(es) != 2 || es[0].ID != ids[2] || es[1].ID != ids[1] {
		t.Errorf("Ledger(app, limit 2) = %+v", es)
	}
	es, _ = rs.Ledger(ctx, reseller.LedgerFilter{AppID: "app", Before: ids[1], Limit: 2})
	if len(es) != 1 || es[0].ID != ids[0] {
		t.Errorf("Ledger(app, before) = %+v", es)
	}
	if es, _ := rs.Ledger(ctx, reseller.LedgerFilter{AppID: "other", Limit: 10}); len(es) != 0 {
		t.Errorf("Ledger(other app) = %+v, want none", es)
	}
}

func testResellerKeys(t *testing.T, db *store.DB) {
	ctx := context.Background()
	rs := db.ResellerStore()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	addReseller(t, db, "app", "r1", 0)
	addReseller(t, db, "app", "r2", 0)
	owner := addKeys(t, db, newKey("app", "OWNER"))
	mine := []license.Key{newKey("app", "R1-A"), newKey("app", "R1-B"), newKey("app", "R1-C")}
	theirs := []license.Key{newKey("app", "R2-A")}
	rsTx(t, db, func(ctx context.Context, tx reseller.Tx) error {
		if err := tx.InsertResellerKeys(ctx, "r1", mine); err != nil {
			return err
		}
		return tx.InsertResellerKeys(ctx, "r2", theirs)
	})
	for _, k := range append(mine, theirs...) {
		if k.ID == 0 {
			t.Fatalf("InsertResellerKeys left %s without an ID", k.LicenseKey)
		}
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		k, err := tx.KeyForUpdate(ctx, "app", "R1-B")
		if err != nil {
			return err
		}
		k.Status = license.StatusBanned
		return tx.UpdateKey(ctx, k)
	})
	names := func(keys []license.Key) []string {
		out := []string{}
		for _, k := range keys {
			out = append(out, k.LicenseKey)
		}
		return out
	}
	f := reseller.KeyFilter{AppID: "app", ResellerID: "r1", Limit: 10, Now: t0}
	keys, err := rs.ResellerKeys(ctx, f)
	if got := names(keys); err != nil || !reflect.DeepEqual(got, []string{"R1-A", "R1-B", "R1-C"}) {
		t.Errorf("ResellerKeys(r1) = %v, %v", got, err)
	}
	f.Status = license.StatusBanned
	if keys, _ := rs.ResellerKeys(ctx, f); !reflect.DeepEqual(names(keys), []string{"R1-B"}) {
		t.Errorf("ResellerKeys(r1, banned) = %v", names(keys))
	}
	f.Status, f.After, f.Limit = "", mine[0].ID, 1
	if keys, _ := rs.ResellerKeys(ctx, f); !reflect.DeepEqual(names(keys), []string{"R1-B"}) {
		t.Errorf("ResellerKeys(r1, after A, limit 1) = %v", names(keys))
	}
	if keys, _ := rs.ResellerKeys(ctx, reseller.KeyFilter{AppID: "app", ResellerID: "none", Limit: 10, Now: t0}); keys == nil || len(keys) != 0 {
		t.Errorf("ResellerKeys(none) = %#v, want an empty list", keys)
	}
	// The owner's key listing sees every key.
	if all, _ := ls.Keys(ctx, license.KeyFilter{AppID: "app", Limit: 10, Now: t0}); len(all) != 5 {
		t.Errorf("Keys(app) = %d keys, want 5", len(all))
	}

	who := func(lk string) (string, error) {
		var id string
		err := rsTxErr(db, func(ctx context.Context, tx reseller.Tx) error {
			var err error
			id, err = tx.KeyReseller(ctx, "app", lk)
			return err
		})
		return id, err
	}
	for lk, want := range map[string]string{"R1-A": "r1", "R2-A": "r2", owner[0].LicenseKey: ""} {
		if got, err := who(lk); err != nil || got != want {
			t.Errorf("KeyReseller(%s) = %q, %v; want %q", lk, got, err, want)
		}
	}
	_, err = who("MISSING")
	wantErr(t, "KeyReseller missing", err, apperr.ErrNotFound)

	// Deleting a reseller keeps its keys (no longer anyone's) and drops its ledger.
	rsTx(t, db, func(ctx context.Context, tx reseller.Tx) error {
		if err := tx.AddLedger(ctx, &reseller.Entry{ResellerID: "r1", At: t0, Delta: 1, BalanceAfter: 1, Reason: reseller.ReasonTopUp}); err != nil {
			return err
		}
		return tx.DeleteReseller(ctx, "r1")
	})
	if got, err := who("R1-A"); err != nil || got != "" {
		t.Errorf("after deleting r1, KeyReseller(R1-A) = %q, %v; want \"\"", got, err)
	}
	if _, err := ls.Key(ctx, "app", "R1-C"); err != nil {
		t.Errorf("after deleting r1 its key is gone: %v", err)
	}
	if es, _ := rs.Ledger(ctx, reseller.LedgerFilter{AppID: "app", Limit: 10}); len(es) != 0 {
		t.Errorf("after deleting r1 the ledger holds %+v", es)
	}
}

// testResellerConcurrentDebits runs many debits of one balance at once: each
// succeeds only while the balance covers it, so the balance ends at exactly
// what the successes left, never below zero.
func testResellerConcurrentDebits(t *testing.T, db *store.DB) {
	ctx := context.Background()
	addApp(t, db, "app")
	const initial, workers, tries, amount = 50, 8, 5, 3
	addReseller(t, db, "app", "r1", initial)
	var ok atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range tries {
				err := rsTxErr(db, func(ctx context.Context, tx reseller.Tx) error {
					_, done, err := tx.Debit(ctx, "r1", amount, t0)
					if done {
						ok.Add(1)
					}
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("debit: %v", err)
	}
	r, err := db.ResellerStore().Reseller(ctx, "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(initial % amount); r.Balance != want || ok.Load() != initial/amount {
		t.Errorf("after %d concurrent debits of %d from %d: balance %d with %d successes, want %d with %d",
			workers*tries, amount, initial, r.Balance, ok.Load(), want, initial/amount)
	}
}
