package storetest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/account"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/store"
)

// ---- account helpers ----

func newAccount(appID, username string) *license.Account {
	return &license.Account{AppID: appID, Username: username, Email: username + "@example.com", PasswordHash: "hash-" + username,
		Status: license.StatusActive, MaxDevices: 1, CreatedAt: t0, UpdatedAt: t0}
}

func addAccounts(t *testing.T, db *store.DB, as ...*license.Account) {
	t.Helper()
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for _, a := range as {
			if err := tx.InsertAccount(ctx, a); err != nil {
				return err
			}
		}
		return nil
	})
	for _, a := range as {
		if a.ID == 0 {
			t.Fatalf("InsertAccount left account %s without an ID", a.Username)
		}
	}
}

func checkAccount(t *testing.T, what string, got *license.Account, want *license.Account) {
	t.Helper()
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("AppID", got.AppID, want.AppID)
	d.eq("Username", got.Username, want.Username)
	d.eq("Email", got.Email, want.Email)
	d.eq("PasswordHash", got.PasswordHash, want.PasswordHash)
	d.eq("PasswordResetRequired", got.PasswordResetRequired, want.PasswordResetRequired)
	d.eq("Status", got.Status, want.Status)
	d.eq("MaxDevices", got.MaxDevices, want.MaxDevices)
	d.eq("Features", string(got.Features), string(want.FeaturesJSON()))
	d.eq("LicenseKey", got.LicenseKey, want.LicenseKey)
	d.optTime("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	d.optTime("LastLoginAt", got.LastLoginAt, want.LastLoginAt)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	d.report(t, what)
}

func newAccountSession(id, appID string, accountID int64, created time.Time) *license.Session {
	s := newSession(id, appID, 0, created)
	s.KeyID, s.AccountID = nil, ptr(accountID)
	return s
}

// checkAccountSession is checkSession plus the account the session belongs to.
func checkAccountSession(t *testing.T, what string, got *license.Session, want *license.Session) {
	t.Helper()
	checkSession(t, what, got, want)
	if !reflect.DeepEqual(got.AccountID, want.AccountID) {
		t.Errorf("%s: AccountID = %v, want %v", what, optInt(got.AccountID), optInt(want.AccountID))
	}
}

// optInt renders an optional ID readably in failure messages.
func optInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func accountNames(as []license.Account) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.Username)
	}
	return out
}

func redemptionKeys(rs []license.Redemption) []int64 {
	out := []int64{}
	for _, r := range rs {
		out = append(out, r.KeyID)
	}
	return out
}

// ---- accounts ----

// Every field survives the round trip, read by username (inside and outside
// a transaction) and by ID; unset optional fields stay unset.
func testAccountRoundTrip(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.AccountStore()
	addApp(t, db, "app")
	full := newAccount("app", "Alice.Smith")
	full.Email, full.PasswordResetRequired, full.Status, full.MaxDevices = "Alice@Example.com", true, license.StatusPaused, 3
	full.Features = json.RawMessage(`{"pro":true,"seats":5}`)
	full.LicenseKey = "KEY-LAST-REDEEMED"
	full.ExpiresAt, full.LastLoginAt = ptr(t0.Add(30*24*time.Hour)), ptr(t0.Add(time.Hour))
	full.UpdatedAt = t0.Add(2 * time.Hour)
	bare := newAccount("app", "bob")
	bare.Email, bare.PasswordHash = "", "$2a$10$hash"
	addAccounts(t, db, full, bare)
	if bare.ID == full.ID {
		t.Fatalf("InsertAccount gave both accounts ID %d", full.ID)
	}

	for _, want := range []*license.Account{full, bare} {
		key := license.UsernameKey(want.Username)
		got, err := ls.AccountByUsername(ctx, "app", key)
		if err != nil {
			t.Fatalf("AccountByUsername(%s): %v", key, err)
		}
		checkAccount(t, "AccountByUsername("+key+")", got, want)
		inTx(t, db, func(ctx context.Context, tx storeTx) error {
			got, err := tx.AccountForUpdate(ctx, "app", key)
			if err != nil {
				return err
			}
			checkAccount(t, "AccountForUpdate("+key+")", got, want)
			got, err = tx.AccountByIDForUpdate(ctx, "app", want.ID)
			if err != nil {
				return err
			}
			checkAccount(t, "AccountByIDForUpdate("+key+")", got, want)
			return nil
		})
	}

	// UpdateAccount writes every mutable field, setting and clearing the optional times.
	updated := *full
	updated.Email, updated.PasswordHash, updated.PasswordResetRequired = "new@example.com", "new-hash", false
	updated.Status, updated.MaxDevices, updated.Features = license.StatusBanned, 5, json.RawMessage(`{"tier":"gold"}`)
	updated.LicenseKey, updated.ExpiresAt, updated.LastLoginAt = "KEY-NEWER", nil, ptr(t0.Add(3*time.Hour))
	updated.UpdatedAt = t0.Add(4 * time.Hour)
	updatedBare := *bare
	updatedBare.PasswordResetRequired, updatedBare.Status = true, license.StatusPaused
	updatedBare.ExpiresAt, updatedBare.Features = ptr(t0.Add(-time.Hour)), json.RawMessage(`{"beta":1}`)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		if err := tx.UpdateAccount(ctx, &updated); err != nil {
			return err
		}
		if err := tx.UpdateAccount(ctx, &updatedBare); err != nil {
			return err
		}
		// The transaction sees its own writes.
		got, err := tx.AccountByIDForUpdate(ctx, "app", full.ID)
		if err != nil {
			return err
		}
		checkAccount(t, "AccountByIDForUpdate after UpdateAccount in the same tx", got, &updated)
		return nil
	})
	for _, want := range []*license.Account{&updated, &updatedBare} {
		got, err := ls.AccountByUsername(ctx, "app", license.UsernameKey(want.Username))
		if err != nil {
			t.Fatal(err)
		}
		checkAccount(t, "AccountByUsername after UpdateAccount", got, want)
	}
}

// Usernames are unique per app regardless of case; lookups of unknown
// accounts, of another app's account and updates of missing ones fail with
// ErrNotFound.
func testAccountConflictsAndMissing(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.AccountStore()
	addApp(t, db, "app")
	addApp(t, db, "other")
	bob := newAccount("app", "bob")
	addAccounts(t, db, bob)

	for _, name := range []string{"bob", "Bob", "BOB"} {
		wantErr(t, "InsertAccount of "+name+" after bob", txErr(db, func(ctx context.Context, tx storeTx) error {
			return tx.InsertAccount(ctx, newAccount("app", name))
		}), apperr.ErrConflict)
	}
	// The same username in another app is a different account.
	otherBob := newAccount("other", "Bob")
	addAccounts(t, db, otherBob)
	if otherBob.ID == bob.ID {
		t.Errorf("accounts of two apps share ID %d", bob.ID)
	}
	got, err := ls.AccountByUsername(ctx, "other", "bob")
	if err != nil {
		t.Fatal(err)
	}
	checkAccount(t, "AccountByUsername(other, bob)", got, otherBob)
	got, err = ls.AccountByUsername(ctx, "app", "bob")
	if err != nil {
		t.Fatal(err)
	}
	checkAccount(t, "AccountByUsername(app, bob)", got, bob)

	_, err = ls.AccountByUsername(ctx, "app", "nobody")
	wantErr(t, "AccountByUsername(unknown)", err, apperr.ErrNotFound)
	_, err = ls.AccountByUsername(ctx, "nope", "bob")
	wantErr(t, "AccountByUsername(unknown app)", err, apperr.ErrNotFound)
	wantErr(t, "AccountForUpdate(unknown)", txErr(db, func(ctx context.Context, tx storeTx) error {
		_, err := tx.AccountForUpdate(ctx, "app", "nobody")
		return err
	}), apperr.ErrNotFound)
	wantErr(t, "AccountByIDForUpdate(unknown ID)", txErr(db, func(ctx context.Context, tx storeTx) error {
		_, err := tx.AccountByIDForUpdate(ctx, "app", bob.ID+otherBob.ID+100)
		return err
	}), apperr.ErrNotFound)
	wantErr(t, "AccountByIDForUpdate of another app's account", txErr(db, func(ctx context.Context, tx storeTx) error {
		_, err := tx.AccountByIDForUpdate(ctx, "app", otherBob.ID)
		return err
	}), apperr.ErrNotFound)
	wantErr(t, "UpdateAccount of a missing ID", txErr(db, func(ctx context.Context, tx storeTx) error {
		a := *bob
		a.ID = bob.ID + otherBob.ID + 100
		return tx.UpdateAccount(ctx, &a)
	}), apperr.ErrNotFound)
	wantErr(t, "DeleteAccount of a missing ID", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.DeleteAccount(ctx, bob.ID+otherBob.ID+100)
	}), apperr.ErrNotFound)
	if err := txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.InsertAccount(ctx, newAccount("nope", "carol"))
	}); err == nil {
		t.Errorf("InsertAccount into an unknown app succeeded, want an error")
	}
}

// Usernames are unique and found by their Unicode case folding
// (license.UsernameKey), beyond ASCII too, and an account keeps the spelling
// it was stored with.
func testAccountFoldedUsernames(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.AccountStore()
	addApp(t, db, "app")
	strasse, kim := newAccount("app", "Straße"), newAccount("app", "Kim")
	addAccounts(t, db, strasse, kim)

	for _, name := range []string{"STRASSE", "strasse", "straße", "\u017Ftraße", "kim", "KIM", "\u212Aim"} {
		wantErr(t, "InsertAccount of "+name, txErr(db, func(ctx context.Context, tx storeTx) error {
			return tx.InsertAccount(ctx, newAccount("app", name))
		}), apperr.ErrConflict)
	}
	for _, c := range []struct {
		spelling string
		want     *license.Account
	}{{"STRASSE", strasse}, {"\u017Ftrasse", strasse}, {"kIM", kim}, {"\u212AIM", kim}} {
		key := license.UsernameKey(c.spelling)
		got, err := ls.AccountByUsername(ctx, "app", key)
		if err != nil {
			t.Fatalf("AccountByUsername(%q): %v", key, err)
		}
		checkAccount(t, "AccountByUsername of "+c.spelling, got, c.want)
		inTx(t, db, func(ctx context.Context, tx storeTx) error {
			got, err := tx.AccountForUpdate(ctx, "app", key)
			if err != nil {
				return err
			}
			checkAccount(t, "AccountForUpdate of "+c.spelling, got, c.want)
			return nil
		})
		got, err = db.CustomerStore().Account(ctx, "app", key)
		if err != nil {
			t.Fatalf("customer Account(%q): %v", key, err)
		}
		checkAccount(t, "customer Account of "+c.spelling, got, c.want)
	}
	// Another name stays another account.
	addAccounts(t, db, newAccount("app", "Strasse2"))
}

// Accounts lists by ID with a cursor and a limit; Query is a literal,
// case-insensitive substring of the username or the e-mail.
func testAccountListing(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.AccountStore()
	addApp(t, db, "app")
	addApp(t, db, "other")
	mk := func(app, username, email string) *license.Account {
		a := newAccount(app, username)
		a.Email = email
		return a
	}
	as := []*license.Account{
		mk("app", "alice", "alice@example.com"),
		mk("app", "Bob_Smith", "bob@Example.ORG"),
		mk("app", "bobxsmith", "bx@example.net"),
		mk("app", "carol", "50%off@shop.example"),
		mk("app", "dave", "dave50off@shop.example"),
		mk("app", "erin", `e\rin@example.com`),
		mk("app", "frank", ""),
		mk("app", "gina", "Émile.ÖZ@exemple.fr"),
	}
	addAccounts(t, db, as...)
	addAccounts(t, db, mk("other", "alice", "alice@example.com"), mk("other", "bob_other", "bob@example.org"))
	for i := 1; i < len(as); i++ {
		if as[i].ID <= as[i-1].ID {
			t.Fatalf("InsertAccount IDs %d, %d: want increasing", as[i-1].ID, as[i].ID)
		}
	}

	all := []string{"alice", "Bob_Smith", "bobxsmith", "carol", "dave", "erin", "frank", "gina"}
	cases := []struct {
		name string
		f    account.Filter
		want []string
	}{
		{"every account of the app, by ID", account.Filter{}, all},
		{"cursor", account.Filter{After: as[1].ID}, all[2:]},
		{"limit", account.Filter{Limit: 2}, all[:2]},
		{"cursor and limit", account.Filter{After: as[0].ID, Limit: 2}, all[1:3]},
		{"cursor at the end", account.Filter{After: as[len(as)-1].ID}, []string{}},
		{"username, any case", account.Filter{Query: "BOB"}, []string{"Bob_Smith", "bobxsmith"}},
		{"username substring", account.Filter{Query: "smi"}, []string{"Bob_Smith", "bobxsmith"}},
		{"e-mail, any case", account.Filter{Query: "example.org"}, []string{"Bob_Smith"}},
		{"e-mail, query upper-case", account.Filter{Query: "EXAMPLE.NET"}, []string{"bobxsmith"}},
		{"_ is literal", account.Filter{Query: "_"}, []string{"Bob_Smith"}},
		{"_ inside a query is literal", account.Filter{Query: "b_s"}, []string{"Bob_Smith"}},
		{"% is literal", account.Filter{Query: "%"}, []string{"carol"}},
		{"% inside a query is literal", account.Filter{Query: "50%off"}, []string{"carol"}},
		{`\ is literal`, account.Filter{Query: `\`}, []string{"erin"}},
		{"non-ASCII e-mail, lower-case query", account.Filter{Query: "émile"}, []string{"gina"}},
		{"non-ASCII e-mail, upper-case query", account.Filter{Query: "ÖZ@"}, []string{"gina"}},
		{"no match", account.Filter{Query: "nobody"}, []string{}},
		{"query with a cursor", account.Filter{Query: "bob", After: as[1].ID}, []string{"bobxsmith"}},
		{"query with a limit", account.Filter{Query: "shop", Limit: 1}, []string{"carol"}},
	}
	for _, c := range cases {
		f := c.f
		f.AppID = "app"
		if f.Limit == 0 {
			f.Limit = 100
		}
		got, err := ls.Accounts(ctx, f)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(accountNames(got), c.want) {
			t.Errorf("%s: Accounts(%+v) = %v, want %v", c.name, f, accountNames(got), c.want)
		}
	}
	got, err := ls.Accounts(ctx, account.Filter{AppID: "other", Query: "ALICE", Limit: 100})
	if err != nil || len(got) != 1 || got[0].AppID != "other" {
		t.Errorf("Accounts(other, ALICE) = %+v, %v; want other's alice only", got, err)
	}
	got, err = ls.Accounts(ctx, account.Filter{AppID: "app", Limit: 100})
	if err != nil || len(got) != len(as) {
		t.Fatalf("Accounts = %v, %v", accountNames(got), err)
	}
	checkAccount(t, "listed account", &got[1], as[1])
	if got, err := ls.Accounts(ctx, account.Filter{AppID: "nope", Limit: 100}); err != nil || got == nil || len(got) != 0 {
		t.Errorf("Accounts of an unknown app = %#v, %v; want an empty, non-nil list", got, err)
	}
}

// An account's devices: upserting keeps the first-seen time and moves
// last-seen; listed oldest first; deleted all at once with a count.
func testAccountDevices(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.AccountStore()
	addApp(t, db, "app")
	acc, other := newAccount("app", "alice"), newAccount("app", "bob")
	addAccounts(t, db, acc, other)
	t1, t2, t3 := t0, t0.Add(time.Minute), t0.Add(2*time.Minute)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for _, d := range []struct {
			hwid string
			at   time.Time
		}{{"hw-c", t1}, {"hw-b", t1}, {"hw-b", t2}, {"hw-a", t3}} {
			if err := tx.UpsertAccountDevice(ctx, acc.ID, d.hwid, d.at); err != nil {
				return err
			}
		}
		// The transaction sees its own writes.
		ds, err := tx.AccountDevices(ctx, acc.ID)
		if err != nil {
			return err
		}
		if len(ds) != 3 {
			t.Errorf("tx.AccountDevices = %v, want 3 devices", ds)
		}
		return tx.UpsertAccountDevice(ctx, other.ID, "hw-b", t1)
	})
	want := []license.Device{
		{AccountID: acc.ID, HWID: "hw-b", CreatedAt: t1, LastSeenAt: t2},
		{AccountID: acc.ID, HWID: "hw-c", CreatedAt: t1, LastSeenAt: t1},
		{AccountID: acc.ID, HWID: "hw-a", CreatedAt: t3, LastSeenAt: t3},
	}
	check := func(what string, ds []license.Device) {
		t.Helper()
		if len(ds) != len(want) {
			t.Errorf("%s = %+v, want hw-b, hw-c, hw-a", what, ds)
			return
		}
		var d diffs
		for i, w := range want {
			d.eq("HWID", ds[i].HWID, w.HWID)
			d.eq("AccountID", ds[i].AccountID, w.AccountID)
			d.eq("KeyID", ds[i].KeyID, int64(0))
			d.time(w.HWID+".CreatedAt", ds[i].CreatedAt, w.CreatedAt)
			d.time(w.HWID+".LastSeenAt", ds[i].LastSeenAt, w.LastSeenAt)
		}
		d.report(t, what+" (oldest first, then by HWID)")
	}
	ds, err := ls.AccountDevices(ctx, acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("AccountDevices", ds)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		ds, err := tx.AccountDevices(ctx, acc.ID)
		check("tx.AccountDevices", ds)
		return err
	})
	if ds, err := ls.AccountDevices(ctx, other.ID); err != nil || len(ds) != 1 || ds[0].AccountID != other.ID {
		t.Errorf("other account's devices = %+v, %v; want its hw-b only", ds, err)
	}

	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		n, err := tx.DeleteAccountDevices(ctx, acc.ID)
		if n != 3 {
			t.Errorf("DeleteAccountDevices = %d, want 3", n)
		}
		if err != nil {
			return err
		}
		n, err = tx.DeleteAccountDevices(ctx, acc.ID)
		if n != 0 {
			t.Errorf("DeleteAccountDevices again = %d, want 0", n)
		}
		return err
	})
	if ds, err := ls.AccountDevices(ctx, acc.ID); err != nil || len(ds) != 0 {
		t.Errorf("AccountDevices after DeleteAccountDevices = %v, %v; want none", ds, err)
	}
	if ds, err := ls.AccountDevices(ctx, other.ID); err != nil || len(ds) != 1 {
		t.Errorf("other account's devices after DeleteAccountDevices = %v, %v; want hw-b still there", ds, err)
	}
}

// Account sessions: stored with their account and no key, listed and ended
// per account, never mixed up with key sessions. On a fresh database the
// first key and the first account both get ID 1, so a query on the wrong
// holder column shows.
func testAccountSessions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	k := addKeys(t, db, newKey("app", "K-1"))[0].ID
	alice, bob := newAccount("app", "alice"), newAccount("app", "bob")
	addAccounts(t, db, alice, bob)
	// IDs sort differently from creation times: oldest first means by time.
	sa1 := newAccountSession("sa-b", "app", alice.ID, t0)
	sa2 := newAccountSession("sa-c", "app", alice.ID, t0.Add(-time.Second))
	sa3 := newAccountSession("sa-a", "app", alice.ID, t0.Add(time.Second))
	sb := newAccountSession("sb", "app", bob.ID, t0)
	sk := newSession("sk", "app", k, t0)
	addSessions(t, db, sa1, sa2, sa3, sb, sk)

	early := t0.Add(30 * time.Second)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		got, err := tx.SessionByTokenHash(ctx, sa1.TokenHash)
		if err != nil {
			return err
		}
		checkAccountSession(t, "SessionByTokenHash(account session)", got, sa1)
		got, err = tx.SessionByID(ctx, sb.ID)
		if err != nil {
			return err
		}
		checkAccountSession(t, "SessionByID(account session)", got, sb)
		got, err = tx.SessionByTokenHash(ctx, sk.TokenHash)
		if err != nil {
			return err
		}
		checkAccountSession(t, "SessionByTokenHash(key session)", got, sk)

		live, err := tx.LiveSessionsOfAccount(ctx, alice.ID)
		if err != nil {
			return err
		}
		if got := sessionIDs(live); !reflect.DeepEqual(got, []string{"sa-c", "sa-b", "sa-a"}) {
			t.Errorf("LiveSessionsOfAccount = %v, want sa-c, sa-b, sa-a (oldest first)", got)
		} else {
			checkAccountSession(t, "LiveSessionsOfAccount[1]", &live[1], sa1)
		}
		live, err = tx.LiveSessionsOfKey(ctx, k)
		if got := sessionIDs(live); !reflect.DeepEqual(got, []string{"sk"}) {
			t.Errorf("LiveSessionsOfKey = %v, want sk only", got)
		}
		if err != nil {
			return err
		}
		return tx.EndSession(ctx, sa3.ID, license.CodeSessionRevoked, early)
	})

	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		live, err := tx.LiveSessionsOfAccount(ctx, alice.ID)
		if got := sessionIDs(live); !reflect.DeepEqual(got, []string{"sa-c", "sa-b"}) {
			t.Errorf("LiveSessionsOfAccount after EndSession = %v, want sa-c, sa-b (only live ones)", got)
		}
		return err
	})

	// Listing: live sessions only, by ID, filtered per account or key; the
	// account's username is joined.
	cases := []struct {
		name string
		f    license.SessionFilter
		want []string
	}{
		{"every live session", license.SessionFilter{}, []string{"sa-b", "sa-c", "sb", "sk"}},
		{"of alice", license.SessionFilter{AccountID: alice.ID}, []string{"sa-b", "sa-c"}},
		{"of bob", license.SessionFilter{AccountID: bob.ID}, []string{"sb"}},
		{"of the key", license.SessionFilter{KeyID: k}, []string{"sk"}},
		{"of alice after a cursor", license.SessionFilter{AccountID: alice.ID, After: "sa-b"}, []string{"sa-c"}},
	}
	for _, c := range cases {
		f := c.f
		f.AppID = "app"
		f.Limit = 100
		got, err := ls.Sessions(ctx, f)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(sessionIDs(got), c.want) {
			t.Errorf("%s: Sessions = %v, want %v", c.name, sessionIDs(got), c.want)
		}
	}
	got, err := ls.Sessions(ctx, license.SessionFilter{AppID: "app", Limit: 100})
	if err != nil || len(got) != 4 {
		t.Fatalf("Sessions = %v, %v", sessionIDs(got), err)
	}
	checkAccountSession(t, "listed account session", &got[0], sa1)
	if got[0].Username != "alice" || got[0].LicenseKey != "" {
		t.Errorf("listed account session: Username %q, LicenseKey %q; want alice and empty", got[0].Username, got[0].LicenseKey)
	}
	if got[3].Username != "" || got[3].LicenseKey != "K-1" || got[3].AccountID != nil {
		t.Errorf("listed key session: Username %q, LicenseKey %q, AccountID %v; want empty, K-1, nil",
			got[3].Username, got[3].LicenseKey, optInt(got[3].AccountID))
	}

	// EndAccountSessions ends the account's live sessions only and counts them.
	end := t0.Add(time.Minute)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		n, err := tx.EndAccountSessions(ctx, alice.ID, license.CodeSessionRevoked, end)
		if err != nil {
			return err
		}
		if n != 2 {
			t.Errorf("EndAccountSessions = %d, want 2 (the ended one is not counted)", n)
		}
		n, err = tx.EndAccountSessions(ctx, alice.ID, license.CodeBanned, end.Add(time.Hour))
		if n != 0 {
			t.Errorf("EndAccountSessions again = %d, want 0", n)
		}
		return err
	})
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		live, err := tx.LiveSessionsOfAccount(ctx, alice.ID)
		if err != nil {
			return err
		}
		if len(live) != 0 {
			t.Errorf("LiveSessionsOfAccount after EndAccountSessions = %v, want none", sessionIDs(live))
		}
		for _, s := range []*license.Session{sa1, sa2} {
			got, err := tx.SessionByID(ctx, s.ID)
			if err != nil {
				return err
			}
			want := *s
			want.EndedAt, want.EndReason = &end, license.CodeSessionRevoked
			checkAccountSession(t, "session after EndAccountSessions", got, &want)
		}
		got, err := tx.SessionByID(ctx, sa3.ID)
		if err != nil {
			return err
		}
		want := *sa3
		want.EndedAt, want.EndReason = &early, license.CodeSessionRevoked
		checkAccountSession(t, "earlier ended session after EndAccountSessions", got, &want)
		for _, s := range []*license.Session{sb, sk} {
			got, err := tx.SessionByID(ctx, s.ID)
			if err != nil {
				return err
			}
			checkAccountSession(t, "another holder's session after EndAccountSessions", got, s)
		}
		return nil
	})
}

// HeartbeatView of an account session describes the account (status and
// expiry, no key string); of a key session, still the key.
func testAccountHeartbeatView(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	key := newKey("app", "K-ACTIVE")
	key.Status, key.ActivatedAt, key.ExpiresAt = license.StatusActive, ptr(t0), ptr(t0.Add(48*time.Hour))
	k := addKeys(t, db, key)[0].ID
	// The first account shares ID 1 with the key on a fresh database, with a
	// different status and expiry.
	paused := newAccount("app", "paused")
	paused.Status, paused.ExpiresAt = license.StatusPaused, ptr(t0.Add(10*24*time.Hour))
	life := newAccount("app", "lifetime")
	addAccounts(t, db, paused, life)
	sp := newAccountSession("s-paused", "app", paused.ID, t0)
	sl := newAccountSession("s-life", "app", life.ID, t0)
	sk := newSession("s-key", "app", k, t0)
	addSessions(t, db, sp, sl, sk)

	view := func(hash string) *license.HeartbeatView {
		t.Helper()
		v, err := ls.HeartbeatView(ctx, hash)
		if err != nil {
			t.Fatalf("HeartbeatView(%s): %v", hash, err)
		}
		return v
	}
	v := view(sp.TokenHash)
	var d diffs
	d.eq("Session.ID", v.Session.ID, sp.ID)
	d.eq("Session.TokenHash", v.Session.TokenHash, sp.TokenHash)
	d.eq("Session.AppID", v.Session.AppID, "app")
	d.eq("Session.KeyID", v.Session.KeyID, (*int64)(nil))
	d.eq("Session.AccountID", optInt(v.Session.AccountID), paused.ID)
	d.time("Session.LastSeenAt", v.Session.LastSeenAt, sp.LastSeenAt)
	d.optTime("Session.EndedAt", v.Session.EndedAt, nil)
	d.eq("KeyExists", v.KeyExists, true)
	d.eq("KeyStatus", v.KeyStatus, license.StatusPaused)
	d.optTime("KeyExpiry", v.KeyExpiry, paused.ExpiresAt)
	d.eq("KeyString", v.KeyString, "")
	d.report(t, "HeartbeatView of an account session")

	v = view(sl.TokenHash)
	if !v.KeyExists || v.KeyStatus != license.StatusActive || v.KeyExpiry != nil || v.KeyString != "" {
		t.Errorf("HeartbeatView of a lifetime account's session = %+v, want exists, active, no expiry, no key string", v)
	}

	v = view(sk.TokenHash)
	d = nil
	d.eq("Session.KeyID", optInt(v.Session.KeyID), k)
	d.eq("Session.AccountID", v.Session.AccountID, (*int64)(nil))
	d.eq("KeyExists", v.KeyExists, true)
	d.eq("KeyStatus", v.KeyStatus, license.StatusActive)
	d.optTime("KeyExpiry", v.KeyExpiry, key.ExpiresAt)
	d.eq("KeyString", v.KeyString, "K-ACTIVE")
	d.report(t, "HeartbeatView of a key session next to accounts")

	// The account's state is read fresh.
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		a, err := tx.AccountByIDForUpdate(ctx, "app", paused.ID)
		if err != nil {
			return err
		}
		a.Status, a.ExpiresAt = license.StatusBanned, ptr(t0.Add(time.Hour))
		return tx.UpdateAccount(ctx, a)
	})
	v = view(sp.TokenHash)
	d = nil
	d.eq("KeyStatus", v.KeyStatus, license.StatusBanned)
	d.optTime("KeyExpiry", v.KeyExpiry, ptr(t0.Add(time.Hour)))
	d.report(t, "HeartbeatView after the account changed")
	if v := view(sk.TokenHash); v.KeyStatus != license.StatusActive || v.KeyString != "K-ACTIVE" {
		t.Errorf("HeartbeatView of the key session after an account changed = %+v, want the key's state", v)
	}

	// A deleted account leaves its session without account state.
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteAccount(ctx, life.ID) })
	v = view(sl.TokenHash)
	if v.KeyExists || v.KeyStatus != "" || v.KeyExpiry != nil || v.KeyString != "" || v.Session.AccountID != nil {
		t.Errorf("HeartbeatView after the account was deleted = %+v (AccountID %v), want no account state and a nil AccountID",
			v, optInt(v.Session.AccountID))
	}
	if v.Session.EndedAt != nil {
		t.Errorf("deleting an account ended its session in the store (ended_at %v)", v.Session.EndedAt)
	}
}

// Deleting an account deletes its devices; its sessions stay (without an
// account) and its redemptions stay, without an account, so their keys stay
// recognisably redeemed. Its username is free again.
func testDeleteAccount(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.LicenseStore()
	addApp(t, db, "app")
	keys := addKeys(t, db, newKey("app", "K-1"), newKey("app", "K-2"))
	alice, bob := newAccount("app", "Alice"), newAccount("app", "bob")
	addAccounts(t, db, alice, bob)
	live := newAccountSession("s-live", "app", alice.ID, t0)
	ended := newAccountSession("s-ended", "app", alice.ID, t0)
	other := newAccountSession("s-bob", "app", bob.ID, t0)
	addSessions(t, db, live, ended, other)
	end := t0.Add(time.Minute)
	ra := &license.Redemption{KeyID: keys[0].ID, AccountID: alice.ID, DaysAdded: 30, Added: 30 * 24 * time.Hour, CreatedAt: t0}
	rb := &license.Redemption{KeyID: keys[1].ID, AccountID: bob.ID, DaysAdded: 7, Added: 7 * 24 * time.Hour, CreatedAt: t0}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for _, id := range []int64{alice.ID, bob.ID} {
			for _, hw := range []string{"hw-1", "hw-2"} {
				if err := tx.UpsertAccountDevice(ctx, id, hw, t0); err != nil {
					return err
				}
			}
		}
		if err := tx.InsertRedemption(ctx, ra); err != nil {
			return err
		}
		if err := tx.InsertRedemption(ctx, rb); err != nil {
			return err
		}
		return tx.EndSession(ctx, ended.ID, license.CodeSessionRevoked, end)
	})

	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteAccount(ctx, alice.ID) })
	wantErr(t, "DeleteAccount again", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.DeleteAccount(ctx, alice.ID)
	}), apperr.ErrNotFound)

	_, err := db.AccountStore().AccountByUsername(ctx, "app", "alice")
	wantErr(t, "AccountByUsername of a deleted account", err, apperr.ErrNotFound)
	wantErr(t, "AccountByIDForUpdate of a deleted account", txErr(db, func(ctx context.Context, tx storeTx) error {
		_, err := tx.AccountByIDForUpdate(ctx, "app", alice.ID)
		return err
	}), apperr.ErrNotFound)
	if ds, err := db.AccountStore().AccountDevices(ctx, alice.ID); err != nil || len(ds) != 0 {
		t.Errorf("AccountDevices of a deleted account = %+v, %v; want none", ds, err)
	}
	if ds, err := db.AccountStore().AccountDevices(ctx, bob.ID); err != nil || len(ds) != 2 {
		t.Errorf("other account's devices = %+v, %v; want both kept", ds, err)
	}
	if rs, err := db.AccountStore().Redemptions(ctx, alice.ID); err != nil || len(rs) != 0 {
		t.Errorf("Redemptions of a deleted account = %+v, %v; want none", rs, err)
	}
	if rs, err := db.AccountStore().Redemptions(ctx, bob.ID); err != nil || !reflect.DeepEqual(redemptionKeys(rs), []int64{keys[1].ID}) {
		t.Errorf("other account's redemptions = %+v, %v; want K-2 kept", rs, err)
	}

	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		r, err := tx.RedemptionOfKey(ctx, keys[0].ID)
		if err != nil {
			t.Errorf("RedemptionOfKey after the account was deleted: %v; want the redemption kept", err)
			return nil
		}
		if r.AccountID != 0 || r.DaysAdded != 30 {
			t.Errorf("redemption of a deleted account = %+v, want AccountID 0 and its grant kept", r)
		}
		got, err := tx.SessionByID(ctx, live.ID)
		if err != nil {
			return err
		}
		want := *live
		want.AccountID = nil
		checkAccountSession(t, "live session of a deleted account", got, &want)
		got, err = tx.SessionByID(ctx, ended.ID)
		if err != nil {
			return err
		}
		want = *ended
		want.AccountID, want.EndedAt, want.EndReason = nil, &end, license.CodeSessionRevoked
		checkAccountSession(t, "ended session of a deleted account", got, &want)
		got, err = tx.SessionByID(ctx, other.ID)
		if err != nil {
			return err
		}
		checkAccountSession(t, "other account's session", got, other)
		ss, err := tx.LiveSessionsOfAccount(ctx, alice.ID)
		if len(ss) != 0 {
			t.Errorf("LiveSessionsOfAccount of a deleted account = %v, want none", sessionIDs(ss))
		}
		return err
	})
	ss, err := ls.Sessions(ctx, license.SessionFilter{AppID: "app", Limit: 100})
	if err != nil || !reflect.DeepEqual(sessionIDs(ss), []string{"s-bob", "s-live"}) {
		t.Fatalf("Sessions after the account was deleted = %v, %v; want s-bob, s-live", sessionIDs(ss), err)
	}
	if ss[1].AccountID != nil || ss[1].Username != "" {
		t.Errorf("listed session of a deleted account: AccountID %v, Username %q; want nil and empty", optInt(ss[1].AccountID), ss[1].Username)
	}

	// The username is free again, in any case.
	again := newAccount("app", "ALICE")
	addAccounts(t, db, again)
	if again.ID == alice.ID {
		t.Errorf("a new account reused the deleted account's ID %d", alice.ID)
	}
	if ss, err := ls.Sessions(ctx, license.SessionFilter{AppID: "app", AccountID: again.ID, Limit: 100}); err != nil || len(ss) != 0 {
		t.Errorf("new account inherited sessions %v, %v", sessionIDs(ss), err)
	}
}

// Redemptions: one per key, read back per key, updated, listed per account
// oldest first with their keys.
func testRedemptions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ls := db.AccountStore()
	addApp(t, db, "app")
	k2 := newKey("app", "K-2")
	k2.Status = license.StatusRedeemed
	keys := addKeys(t, db, newKey("app", "K-1"), k2, newKey("app", "K-3"), newKey("app", "K-4"))
	alice, bob := newAccount("app", "alice"), newAccount("app", "bob")
	addAccounts(t, db, alice, bob)
	r1 := &license.Redemption{KeyID: keys[0].ID, AccountID: alice.ID, DaysAdded: 30, Added: 30 * 24 * time.Hour,
		PriorExpiresAt: ptr(t0), CreatedAt: t0.Add(time.Hour)}
	r2 := &license.Redemption{KeyID: keys[1].ID, AccountID: alice.ID, Lifetime: true,
		PriorExpiresAt: ptr(t0.Add(30 * 24 * time.Hour)), CreatedAt: t0}
	r3 := &license.Redemption{KeyID: keys[2].ID, AccountID: bob.ID, DaysAdded: 7, Added: -3 * time.Hour, CreatedAt: t0}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for _, r := range []*license.Redemption{r1, r2, r3} {
			if err := tx.InsertRedemption(ctx, r); err != nil {
				return err
			}
		}
		return nil
	})
	// A key is redeemed once.
	wantErr(t, "InsertRedemption of a redeemed key", txErr(db, func(ctx context.Context, tx storeTx) error {
		r := *r1
		r.AccountID = bob.ID
		return tx.InsertRedemption(ctx, &r)
	}), apperr.ErrConflict)

	checkRedemption := func(what string, got *license.Redemption, want *license.Redemption, lk string) {
		t.Helper()
		var d diffs
		d.eq("KeyID", got.KeyID, want.KeyID)
		d.eq("AccountID", got.AccountID, want.AccountID)
		d.eq("DaysAdded", got.DaysAdded, want.DaysAdded)
		d.eq("Added", got.Added, want.Added)
		d.eq("Lifetime", got.Lifetime, want.Lifetime)
		d.optTime("PriorExpiresAt", got.PriorExpiresAt, want.PriorExpiresAt)
		d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
		d.eq("LicenseKey", got.LicenseKey, lk)
		d.report(t, what)
	}
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for _, r := range []*license.Redemption{r1, r2, r3} {
			got, err := tx.RedemptionOfKey(ctx, r.KeyID)
			if err != nil {
				return err
			}
			checkRedemption("RedemptionOfKey", got, r, "")
		}
		_, err := tx.RedemptionOfKey(ctx, keys[3].ID)
		wantErr(t, "RedemptionOfKey of an unredeemed key", err, apperr.ErrNotFound)
		// Only lifetime grants whose key is still redeemed.
		lr, err := tx.ActiveLifetimeRedemptions(ctx, alice.ID)
		if err != nil {
			return err
		}
		if got := redemptionKeys(lr); !reflect.DeepEqual(got, []int64{keys[1].ID}) {
			t.Errorf("ActiveLifetimeRedemptions = %v, want K-2 (%d)", got, keys[1].ID)
		}
		return nil
	})

	// UpdateRedemption changes the prior expiry, clearing and setting it.
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		r := *r1
		r.PriorExpiresAt = nil
		if err := tx.UpdateRedemption(ctx, &r); err != nil {
			return err
		}
		r = *r3
		r.PriorExpiresAt = ptr(t0.Add(5 * time.Hour))
		return tx.UpdateRedemption(ctx, &r)
	})
	r1.PriorExpiresAt, r3.PriorExpiresAt = nil, ptr(t0.Add(5*time.Hour))
	wantErr(t, "UpdateRedemption of an unredeemed key", txErr(db, func(ctx context.Context, tx storeTx) error {
		return tx.UpdateRedemption(ctx, &license.Redemption{KeyID: keys[3].ID, PriorExpiresAt: ptr(t0)})
	}), apperr.ErrNotFound)
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		for _, r := range []*license.Redemption{r1, r3} {
			got, err := tx.RedemptionOfKey(ctx, r.KeyID)
			if err != nil {
				return err
			}
			checkRedemption("RedemptionOfKey after UpdateRedemption", got, r, "")
		}
		return nil
	})

	rs, err := ls.Redemptions(ctx, alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := redemptionKeys(rs); !reflect.DeepEqual(got, []int64{keys[1].ID, keys[0].ID}) {
		t.Fatalf("Redemptions(alice) = %v, want K-2 then K-1 (oldest first)", got)
	}
	checkRedemption("Redemptions(alice)[0]", &rs[0], r2, "K-2")
	checkRedemption("Redemptions(alice)[1]", &rs[1], r1, "K-1")
	rs, err = ls.Redemptions(ctx, bob.ID)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Redemptions(bob) = %+v, %v; want K-3", rs, err)
	}
	checkRedemption("Redemptions(bob)[0]", &rs[0], r3, "K-3")
	if rs, err := ls.Redemptions(ctx, alice.ID+bob.ID+100); err != nil || len(rs) != 0 {
		t.Errorf("Redemptions of an unknown account = %+v, %v; want none", rs, err)
	}

	// A banned key's lifetime grant is no longer active.
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		k, err := tx.KeyForUpdate(ctx, "app", "K-2")
		if err != nil {
			return err
		}
		k.Status = license.StatusBanned
		return tx.UpdateKey(ctx, k)
	})
	inTx(t, db, func(ctx context.Context, tx storeTx) error {
		lr, err := tx.ActiveLifetimeRedemptions(ctx, alice.ID)
		if len(lr) != 0 {
			t.Errorf("ActiveLifetimeRedemptions after the key was banned = %v, want none", redemptionKeys(lr))
		}
		return err
	})
}
