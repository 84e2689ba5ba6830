package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

func newLicenseFile(id, appID string, keyID int64, hwid string, floating bool, issued time.Time) *license.IssuedFile {
	return &license.IssuedFile{ID: id, AppID: appID, KeyID: keyID, HWID: hwid, Kid: "kid-1", Source: license.FileOnline,
		Floating: floating, IssuedAt: issued, ValidUntil: issued.Add(time.Hour), Text: "-----BEGIN " + id + "-----"}
}

func checkLicenseFile(t *testing.T, what string, got, want *license.IssuedFile) {
	t.Helper()
	w := *want
	w.IssuedAt, w.ValidUntil = stored(w.IssuedAt), stored(w.ValidUntil)
	if w.ReturnedAt != nil {
		w.ReturnedAt = ptr(stored(*w.ReturnedAt))
	}
	if w.RevokedAt != nil {
		w.RevokedAt = ptr(stored(*w.RevokedAt))
	}
	if !reflect.DeepEqual(*got, w) {
		t.Errorf("%s = %+v, want %+v", what, *got, w)
	}
}

func fileIDs(fs []license.IssuedFile) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

// testLicenseFiles: issued license files round-trip; the nonce is unique per
// app (an air-gapped request is used once); BorrowsOfKey lists only
// floating, unreturned, unexpired files; the latest file of a device; the
// listing is newest first and per app; deleting the key deletes its files.
func testLicenseFiles(t *testing.T, db *store.DB) {
	addApp(t, db, "app")
	addApp(t, db, "other")
	keys := addKeys(t, db, newKey("app", "K-1"), newKey("app", "K-2"))
	k, k2 := keys[0].ID, keys[1].ID

	f1 := newLicenseFile("f-1", "app", k, "hw-a", true, t0)
	f2 := newLicenseFile("f-2", "app", k, "hw-b", true, t0.Add(time.Minute))
	f3 := newLicenseFile("f-3", "app", k, "hw-a", false, t0.Add(2*time.Minute))
	f3.Source, f3.Nonce = license.FileOffline, "0123456789abcdef0123456789abcdef"
	fOther := newLicenseFile("f-4", "app", k2, "hw-a", true, t0)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for _, f := range []*license.IssuedFile{f1, f2, f3, fOther} {
			if err := tx.InsertLicenseFile(ctx, f); err != nil {
				return err
			}
		}
		return nil
	})
	wantErr(t, "InsertLicenseFile with a used nonce", txErr(db, func(ctx context.Context, tx storeTx) error {
		f := newLicenseFile("f-5", "app", k2, "hw-z", false, t0)
		f.Nonce = f3.Nonce
		return tx.InsertLicenseFile(ctx, f)
	}), apperr.ErrConflict)
	wantErr(t, "InsertLicenseFile with a taken id", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.InsertLicenseFile(ctx, newLicenseFile("f-1", "app", k2, "hw-z", false, t0))
	}), apperr.ErrConflict)

	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		got, err := tx.LicenseFileByNonce(ctx, "app", f3.Nonce)
		if err != nil {
			return err
		}
		checkLicenseFile(t, "LicenseFileByNonce", got, f3)
		_, err = tx.LicenseFileByNonce(ctx, "other", f3.Nonce)
		wantErr(t, "LicenseFileByNonce(other app)", err, apperr.ErrNotFound)
		got, err = tx.LicenseFileForUpdate(ctx, "app", "f-1")
		if err != nil {
			return err
		}
		checkLicenseFile(t, "LicenseFileForUpdate", got, f1)
		_, err = tx.LicenseFileForUpdate(ctx, "other", "f-1")
		wantErr(t, "LicenseFileForUpdate(other app)", err, apperr.ErrNotFound)
		got, err = tx.LatestLicenseFile(ctx, k, "hw-a")
		if err != nil {
			return err
		}
		checkLicenseFile(t, "LatestLicenseFile", got, f3)
		_, err = tx.LatestLicenseFile(ctx, k, "hw-none")
		wantErr(t, "LatestLicenseFile(no file)", err, apperr.ErrNotFound)

		borrows, err := tx.BorrowsOfKey(ctx, k, t0.Add(30*time.Minute))
		if err != nil {
			return err
		}
		if got := fileIDs(borrows); !reflect.DeepEqual(got, []string{"f-1", "f-2"}) {
			t.Errorf("BorrowsOfKey = %v, want f-1, f-2 (floating only, oldest first)", got)
		}
		// f-1 is valid until t0+1h: past it, only f-2 (until t0+1h1m) holds.
		borrows, err = tx.BorrowsOfKey(ctx, k, t0.Add(time.Hour))
		if err != nil {
			return err
		}
		if got := fileIDs(borrows); !reflect.DeepEqual(got, []string{"f-2"}) {
			t.Errorf("BorrowsOfKey after f-1's valid_until = %v, want f-2", got)
		}
		ret := t0.Add(5 * time.Minute)
		f2.ReturnedAt = &ret
		if err := tx.SetLicenseFileState(ctx, f2); err != nil {
			return err
		}
		rev := t0.Add(6 * time.Minute)
		f1.RevokedAt = &rev
		if err := tx.SetLicenseFileState(ctx, f1); err != nil {
			return err
		}
		wantErr(t, "SetLicenseFileState(missing)", tx.SetLicenseFileState(ctx, &license.IssuedFile{ID: "missing"}), apperr.ErrNotFound)
		borrows, err = tx.BorrowsOfKey(ctx, k, t0.Add(30*time.Minute))
		if err != nil {
			return err
		}
		// A returned file frees its seat; a revoked one still holds it.
		if got := fileIDs(borrows); !reflect.DeepEqual(got, []string{"f-1"}) {
			t.Errorf("BorrowsOfKey after returning f-2 = %v, want f-1 (revoked, still held)", got)
		}
		return nil
	})

	ctx := context.Background()
	ls := db.LicenseStore()
	list, err := ls.LicenseFiles(ctx, "app", k, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := fileIDs(list); !reflect.DeepEqual(got, []string{"f-3", "f-2", "f-1"}) {
		t.Errorf("LicenseFiles = %v, want f-3, f-2, f-1 (newest first)", got)
	}
	if len(list) == 3 {
		checkLicenseFile(t, "LicenseFiles[1]", &list[1], f2)
		checkLicenseFile(t, "LicenseFiles[2]", &list[2], f1)
	}
	if list, err := ls.LicenseFiles(ctx, "other", k, 10); err != nil || len(list) != 0 {
		t.Errorf("LicenseFiles(other app) = %v, %v; want none", fileIDs(list), err)
	}
	if list, err := ls.LicenseFiles(ctx, "app", k, 1); err != nil || len(list) != 1 {
		t.Errorf("LicenseFiles(limit 1) = %v, %v; want one", fileIDs(list), err)
	}

	// Purge: files not revoked, both issued and valid before the cutoff.
	// f-1 is revoked (kept); f-2 and f-4 (valid until t0+1h1m, t0+1h) go
	// with a cutoff of t0+2h; f-3 (issued t0+2m, valid until t0+1h2m) too.
	if n, err := ls.PurgeLicenseFiles(ctx, t0.Add(time.Hour)); err != nil || n != 0 {
		t.Errorf("PurgeLicenseFiles(t0+1h) = %d, %v; want 0 (none valid before)", n, err)
	}
	if n, err := ls.PurgeLicenseFiles(ctx, t0.Add(2*time.Hour)); err != nil || n != 3 {
		t.Errorf("PurgeLicenseFiles(t0+2h) = %d, %v; want 3", n, err)
	}
	if list, err := ls.LicenseFiles(ctx, "app", k, 10); err != nil || !reflect.DeepEqual(fileIDs(list), []string{"f-1"}) {
		t.Errorf("LicenseFiles after the purge = %v, %v; want f-1 (revoked, kept)", fileIDs(list), err)
	}

	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteKey(ctx, k) })
	if list, err := ls.LicenseFiles(ctx, "app", k, 10); err != nil || len(list) != 0 {
		t.Errorf("LicenseFiles after deleting the key = %v, %v; want none", fileIDs(list), err)
	}
}
