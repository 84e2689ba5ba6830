package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/store"
)

// ---- admin platform: sign-outs, two-factor, access tokens, teams ----

// teamAdmin inserts an admin called username (id "u-"+username).
func teamAdmin(t *testing.T, db *store.DB, username string) *admin.User {
	t.Helper()
	u := &admin.User{ID: "u-" + username, Username: username, PasswordHash: "$2a$04$hash-" + username, CreatedAt: t0}
	if err := adminWrite(db, teamEntry("admin.create", "", username), func(ctx context.Context, tx admin.Tx) error { return tx.InsertAdmin(ctx, u) }); err != nil {
		t.Fatalf("InsertAdmin %s: %v", username, err)
	}
	return u
}

// teamEntry is an audit entry of the system at t0.
func teamEntry(action, appID, target string) audit.Entry {
	return audit.Entry{At: t0, Actor: audit.System, Action: action, AppID: appID, Target: target}
}

// teamAudit returns the targets of the audit entries with action, newest first.
func teamAudit(t *testing.T, db *store.DB, action string) []string {
	t.Helper()
	es, err := db.Audit(context.Background(), store.AuditFilter{Action: action})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, e := range es {
		out = append(out, e.Target)
	}
	return out
}

// AdminForJWT returns the admin and whether the JWT id was signed out
// (RevokeJWT, which is idempotent and writes its audit entry); an unknown
// admin is ErrNotFound.
func testTeamAdminForJWT(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	u := teamAdmin(t, db, "root")

	got, revoked, err := as.AdminForJWT(ctx, u.ID, "jti-1")
	if err != nil || got == nil || got.ID != u.ID || got.Username != "root" || revoked {
		t.Fatalf("AdminForJWT (live jti) = %+v, %v, %v; want root, not revoked", got, revoked, err)
	}
	exp := t0.Add(12 * time.Hour)
	if err := adminWrite(db, teamEntry("admin.logout", "", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.RevokeJWT(ctx, "jti-1", exp) }); err != nil {
		t.Fatalf("RevokeJWT: %v", err)
	}
	if _, revoked, err := as.AdminForJWT(ctx, u.ID, "jti-1"); err != nil || !revoked {
		t.Errorf("AdminForJWT (signed-out jti) revoked = %v, %v; want true", revoked, err)
	}
	if _, revoked, err := as.AdminForJWT(ctx, u.ID, "jti-2"); err != nil || revoked {
		t.Errorf("AdminForJWT (another jti) revoked = %v, %v; want false", revoked, err)
	}
	// Signing the same JWT out twice is no error.
	if err := adminWrite(db, teamEntry("admin.logout", "", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.RevokeJWT(ctx, "jti-1", exp) }); err != nil {
		t.Errorf("RevokeJWT again: %v", err)
	}
	if got := teamAudit(t, db, "admin.logout"); len(got) != 2 {
		t.Errorf("admin.logout audit entries = %v, want 2", got)
	}
	_, _, err = as.AdminForJWT(ctx, "u-missing", "jti-1")
	wantErr(t, "AdminForJWT(missing admin)", err, apperr.ErrNotFound)

	// Expired sign-outs are purged; live ones stay.
	if n, err := db.PurgeRevokedJWTs(ctx, exp.Add(-time.Minute)); err != nil || n != 0 {
		t.Errorf("PurgeRevokedJWTs before expiry = %d, %v; want 0", n, err)
	}
	if _, revoked, _ := as.AdminForJWT(ctx, u.ID, "jti-1"); !revoked {
		t.Error("sign-out forgotten before the JWT expired")
	}
	if n, err := db.PurgeRevokedJWTs(ctx, exp.Add(time.Minute)); err != nil || n != 1 {
		t.Errorf("PurgeRevokedJWTs after expiry = %d, %v; want 1", n, err)
	}
}

// UpdateAdmin stores e-mail, password hash, token generation and TOTP
// secrets with its audit entry; codes nil keeps the recovery codes, a slice
// replaces them (empty: none). A missing admin is ErrNotFound.
func testTeamUpdateAdmin(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	u := teamAdmin(t, db, "root")
	other := teamAdmin(t, db, "other")

	u.Email, u.PasswordHash, u.TokenGen, u.TOTPSecret, u.TOTPPending = "root@example.com", "$2a$04$new", 3, "SECRET", "PENDING"
	if err := adminWrite(db, teamEntry("admin.2fa.enable", "", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.UpdateAdmin(ctx, u, []string{"h1", "h2"}) }); err != nil {
		t.Fatalf("UpdateAdmin: %v", err)
	}
	got, err := as.AdminByID(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	var d diffs
	d.eq("Email", got.Email, "root@example.com")
	d.eq("PasswordHash", got.PasswordHash, "$2a$04$new")
	d.eq("TokenGen", got.TokenGen, int64(3))
	d.eq("TOTPSecret", got.TOTPSecret, "SECRET")
	d.eq("TOTPPending", got.TOTPPending, "PENDING")
	d.eq("Operator", got.Operator, false)
	d.time("CreatedAt", got.CreatedAt, t0)
	d.report(t, "admin after UpdateAdmin")
	if got := teamAudit(t, db, "admin.2fa.enable"); !reflect.DeepEqual(got, []string{"root"}) {
		t.Errorf("UpdateAdmin audit entries = %v, want root's", got)
	}

	// codes nil keeps the recovery codes.
	u.Email = "new@example.com"
	if err := adminWrite(db, teamEntry("admin.email", "", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.UpdateAdmin(ctx, u, nil) }); err != nil {
		t.Fatal(err)
	}
	if ok, err := as.UseRecoveryCode(ctx, u.ID, "h1", t0); err != nil || !ok {
		t.Errorf("recovery code after UpdateAdmin(codes nil) = %v, %v; want it still usable", ok, err)
	}
	// A new set replaces the old: the unused h2 is gone, h3 works.
	if err := adminWrite(db, teamEntry("admin.2fa.recovery_codes", "", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.UpdateAdmin(ctx, u, []string{"h3"}) }); err != nil {
		t.Fatal(err)
	}
	if ok, err := as.UseRecoveryCode(ctx, u.ID, "h2", t0); err != nil || ok {
		t.Errorf("replaced recovery code = %v, %v; want refused", ok, err)
	}
	if ok, err := as.UseRecoveryCode(ctx, u.ID, "h3", t0); err != nil || !ok {
		t.Errorf("new recovery code = %v, %v; want usable", ok, err)
	}
	// An empty set clears them.
	if err := adminWrite(db, teamEntry("admin.2fa.recovery_codes", "", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.UpdateAdmin(ctx, u, []string{"h4"}) }); err != nil {
		t.Fatal(err)
	}
	if err := adminWrite(db, teamEntry("admin.2fa.disable", "", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.UpdateAdmin(ctx, u, []string{}) }); err != nil {
		t.Fatal(err)
	}
	if ok, err := as.UseRecoveryCode(ctx, u.ID, "h4", t0); err != nil || ok {
		t.Errorf("recovery code after UpdateAdmin(codes empty) = %v, %v; want refused", ok, err)
	}
	// Another admin's row is untouched.
	if got, err := as.AdminByID(ctx, other.ID); err != nil || got.Email != "" || got.TokenGen != 0 || got.TOTPSecret != "" {
		t.Errorf("other admin after root's updates = %+v, %v", got, err)
	}
	// A missing admin: ErrNotFound and no audit entry.
	missing := &admin.User{ID: "u-missing", Username: "ghost"}
	err = adminWrite(db, teamEntry("admin.ghost", "", "ghost"), func(ctx context.Context, tx admin.Tx) error { return tx.UpdateAdmin(ctx, missing, []string{"hx"}) })
	wantErr(t, "UpdateAdmin(missing admin)", err, apperr.ErrNotFound)
	if got := teamAudit(t, db, "admin.ghost"); len(got) != 0 {
		t.Errorf("refused UpdateAdmin left audit entries %v", got)
	}
}

// ClaimTOTPStep only moves forward: a step is claimed once, and an earlier
// step after a later one is refused; each admin has its own last step.
func testTeamClaimTOTPStep(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	u := teamAdmin(t, db, "root")
	other := teamAdmin(t, db, "other")
	steps := []struct {
		user string
		step int64
		want bool
	}{
		{u.ID, 1000, true},
		{u.ID, 1000, false}, // the same step again
		{u.ID, 999, false},  // an earlier one
		{other.ID, 1000, true},
		{u.ID, 1001, true},
		{u.ID, 1000, false},
		{u.ID, 5000, true},
		{"u-missing", 1, false},
	}
	for i, s := range steps {
		ok, err := as.ClaimTOTPStep(ctx, s.user, s.step)
		if err != nil || ok != s.want {
			t.Errorf("claim #%d (%s, step %d) = %v, %v; want %v", i, s.user, s.step, ok, err, s.want)
		}
	}
}

// UseRecoveryCode uses a code once, only the admin's own, and not after it
// was used.
func testTeamUseRecoveryCode(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	u := teamAdmin(t, db, "root")
	other := teamAdmin(t, db, "other")
	if err := adminWrite(db, teamEntry("admin.2fa.enable", "", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.UpdateAdmin(ctx, u, []string{"ha", "hb"}) }); err != nil {
		t.Fatal(err)
	}
	if err := adminWrite(db, teamEntry("admin.2fa.enable", "", "other"), func(ctx context.Context, tx admin.Tx) error { return tx.UpdateAdmin(ctx, other, []string{"hc"}) }); err != nil {
		t.Fatal(err)
	}
	uses := []struct {
		user, hash string
		want       bool
	}{
		{u.ID, "hc", false}, // another admin's code
		{u.ID, "ha", true},
		{u.ID, "ha", false}, // used
		{u.ID, "nope", false},
		{other.ID, "ha", false},
		{other.ID, "hc", true},
		{u.ID, "hb", true},
	}
	for i, c := range uses {
		ok, err := as.UseRecoveryCode(ctx, c.user, c.hash, t0.Add(time.Duration(i)*time.Second))
		if err != nil || ok != c.want {
			t.Errorf("use #%d (%s, %s) = %v, %v; want %v", i, c.user, c.hash, ok, err, c.want)
		}
	}
}

// Access tokens: inserted with their audit entry, found by hash with their
// admin, listed per admin oldest first, revoked only by their own admin
// (the first revocation time stays), and touched.
func testTeamTokens(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	u := teamAdmin(t, db, "root")
	other := teamAdmin(t, db, "other")

	t1 := &admin.Token{ID: "tok-1", UserID: u.ID, Name: "ci", Hint: "kwp_abcd", CreatedAt: t0}
	t2 := &admin.Token{ID: "tok-2", UserID: u.ID, Name: "deploy", Hint: "kwp_efgh", CreatedAt: t0.Add(time.Second)}
	t3 := &admin.Token{ID: "tok-3", UserID: other.ID, Name: "theirs", Hint: "kwp_ijkl", CreatedAt: t0}
	for i, tk := range []*admin.Token{t1, t2, t3} {
		if err := adminWrite(db, teamEntry("token.create", "", tk.ID), func(ctx context.Context, tx admin.Tx) error { return tx.InsertToken(ctx, tk, fmt.Sprint("hash-", i+1)) }); err != nil {
			t.Fatalf("InsertToken %s: %v", tk.ID, err)
		}
	}
	if got := teamAudit(t, db, "token.create"); !reflect.DeepEqual(got, []string{"tok-3", "tok-2", "tok-1"}) {
		t.Errorf("token.create audit entries = %v", got)
	}
	// A hash is unique: the refused insert leaves no token and no entry.
	dup := &admin.Token{ID: "tok-dup", UserID: u.ID, Name: "dup", Hint: "kwp_dupx", CreatedAt: t0}
	err := adminWrite(db, teamEntry("token.create", "", "tok-dup"), func(ctx context.Context, tx admin.Tx) error { return tx.InsertToken(ctx, dup, "hash-1") })
	wantErr(t, "InsertToken with a taken hash", err, apperr.ErrConflict)
	if got := teamAudit(t, db, "token.create"); len(got) != 3 {
		t.Errorf("refused InsertToken left an audit entry: %v", got)
	}

	check := func(what string, got *admin.Token, want *admin.Token, used, revoked *time.Time) {
		t.Helper()
		var d diffs
		d.eq("ID", got.ID, want.ID)
		d.eq("UserID", got.UserID, want.UserID)
		d.eq("Name", got.Name, want.Name)
		d.eq("Hint", got.Hint, want.Hint)
		d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
		d.optTime("LastUsedAt", got.LastUsedAt, used)
		d.optTime("RevokedAt", got.RevokedAt, revoked)
		d.report(t, what)
	}
	tk, owner, err := as.TokenByHash(ctx, "hash-2")
	if err != nil {
		t.Fatalf("TokenByHash: %v", err)
	}
	check("TokenByHash", tk, t2, nil, nil)
	if owner.ID != u.ID || owner.Username != "root" || owner.Operator {
		t.Errorf("TokenByHash admin = %+v, want root", owner)
	}
	_, _, err = as.TokenByHash(ctx, "hash-unknown")
	wantErr(t, "TokenByHash(unknown)", err, apperr.ErrNotFound)

	list, err := as.Tokens(ctx, u.ID)
	if err != nil || len(list) != 2 {
		t.Fatalf("Tokens(root) = %v, %v; want 2", list, err)
	}
	check("Tokens[0]", &list[0], t1, nil, nil)
	check("Tokens[1]", &list[1], t2, nil, nil)
	if list, err := as.Tokens(ctx, "u-nobody"); err != nil || len(list) != 0 {
		t.Errorf("Tokens(no such admin) = %v, %v; want none", list, err)
	}

	// Touch.
	used := t0.Add(time.Minute)
	if err := as.TouchToken(ctx, "tok-1", used); err != nil {
		t.Fatalf("TouchToken: %v", err)
	}
	tk, _, err = as.TokenByHash(ctx, "hash-1")
	if err != nil {
		t.Fatal(err)
	}
	check("token after TouchToken", tk, t1, &used, nil)

	// Revoke: not another admin's token.
	at := t0.Add(2 * time.Minute)
	err = adminWrite(db, teamEntry("token.revoke", "", "tok-1"), func(ctx context.Context, tx admin.Tx) error { return tx.RevokeToken(ctx, other.ID, "tok-1", at) })
	wantErr(t, "RevokeToken of another admin's token", err, apperr.ErrNotFound)
	err = adminWrite(db, teamEntry("token.revoke", "", "tok-missing"), func(ctx context.Context, tx admin.Tx) error { return tx.RevokeToken(ctx, u.ID, "tok-missing", at) })
	wantErr(t, "RevokeToken(missing)", err, apperr.ErrNotFound)
	if got := teamAudit(t, db, "token.revoke"); len(got) != 0 {
		t.Errorf("refused revocations left audit entries %v", got)
	}
	tk, _, _ = as.TokenByHash(ctx, "hash-1")
	check("token after refused revocations", tk, t1, &used, nil)

	if err := adminWrite(db, teamEntry("token.revoke", "", "tok-1"), func(ctx context.Context, tx admin.Tx) error { return tx.RevokeToken(ctx, u.ID, "tok-1", at) }); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	tk, _, _ = as.TokenByHash(ctx, "hash-1")
	check("token after RevokeToken", tk, t1, &used, &at)
	// Revoking again keeps the first time.
	if err := adminWrite(db, teamEntry("token.revoke", "", "tok-1"), func(ctx context.Context, tx admin.Tx) error {
		return tx.RevokeToken(ctx, u.ID, "tok-1", at.Add(time.Hour))
	}); err != nil {
		t.Errorf("RevokeToken again: %v", err)
	}
	tk, _, _ = as.TokenByHash(ctx, "hash-1")
	check("token revoked twice", tk, t1, &used, &at)
	// The others are untouched.
	tk, _, _ = as.TokenByHash(ctx, "hash-2")
	check("other token of the admin", tk, t2, nil, nil)
	tk, _, _ = as.TokenByHash(ctx, "hash-3")
	check("another admin's token", tk, t3, nil, nil)
	list, _ = as.Tokens(ctx, u.ID)
	if len(list) != 2 || list[0].RevokedAt == nil || list[1].RevokedAt != nil {
		t.Errorf("Tokens after revoking tok-1 = %+v; want both, tok-1 revoked", list)
	}
}

// teamAppWithOwner inserts app id owned (through InsertApp) by owner.
func teamAppWithOwner(t *testing.T, db *store.DB, id, owner string) {
	t.Helper()
	a := newApp(id, t0)
	a.OwnerID = owner
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.InsertApp(ctx, a, "hash-"+id) })
}

// MemberRole tells a member's role, a non-member ("" on an existing app)
// and a missing app apart; Roles maps every app of an admin; InsertApp with
// an owner makes it a member.
func testTeamMemberRoles(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	root := teamAdmin(t, db, "root")
	bob := teamAdmin(t, db, "bob")
	teamAppWithOwner(t, db, "a", root.ID)
	teamAppWithOwner(t, db, "b", bob.ID)
	addApp(t, db, "orphan")
	if err := adminWrite(db, teamEntry("member.set", "a", "bob"), func(ctx context.Context, tx admin.Tx) error {
		return tx.PutMember(ctx, &admin.Member{AppID: "a", UserID: bob.ID, Role: admin.RoleSupport, CreatedAt: t0}, nil)
	}); err != nil {
		t.Fatalf("PutMember: %v", err)
	}
	cases := []struct {
		app, user string
		role      admin.Role
		exists    bool
	}{
		{"a", root.ID, admin.RoleOwner, true},
		{"a", bob.ID, admin.RoleSupport, true},
		{"b", bob.ID, admin.RoleOwner, true},
		{"b", root.ID, "", true}, // not a member
		{"orphan", root.ID, "", true},
		{"missing", root.ID, "", false},
		{"a", "u-nobody", "", true},
	}
	for _, c := range cases {
		role, exists, err := as.MemberRole(ctx, c.app, c.user)
		if err != nil || role != c.role || exists != c.exists {
			t.Errorf("MemberRole(%s, %s) = %q, %v, %v; want %q, %v", c.app, c.user, role, exists, err, c.role, c.exists)
		}
	}
	for user, want := range map[string]map[string]admin.Role{
		root.ID:    {"a": admin.RoleOwner},
		bob.ID:     {"a": admin.RoleSupport, "b": admin.RoleOwner},
		"u-nobody": {},
	} {
		got, err := as.Roles(ctx, user)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Roles(%s) = %v, %v; want %v", user, got, err, want)
		}
	}
}

// Members lists a team oldest first with usernames and e-mails; PutMember
// adds (creating a new admin in the same transaction) and changes roles;
// DeleteMember removes; neither may leave an app without an owner
// (ErrLastOwner, nothing changed, no audit entry).
func testTeamMembers(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	root := teamAdmin(t, db, "root")
	root.Email = "root@example.com"
	if err := adminWrite(db, teamEntry("admin.email", "", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.UpdateAdmin(ctx, root, nil) }); err != nil {
		t.Fatal(err)
	}
	bob := teamAdmin(t, db, "bob")
	teamAppWithOwner(t, db, "a", root.ID)
	addApp(t, db, "other")

	put := func(user string, role admin.Role, at time.Time, fresh *admin.User) error {
		return adminWrite(db, teamEntry("member.set", "a", user+" "+string(role)), func(ctx context.Context, tx admin.Tx) error {
			return tx.PutMember(ctx, &admin.Member{AppID: "a", UserID: user, Role: role, CreatedAt: at}, fresh)
		})
	}
	members := func() []string {
		t.Helper()
		ms, err := as.Members(ctx, "a")
		if err != nil {
			t.Fatalf("Members: %v", err)
		}
		out := []string{}
		for _, m := range ms {
			if m.AppID != "a" {
				t.Errorf("Members(a) lists %+v", m)
			}
			out = append(out, m.Username+":"+string(m.Role))
		}
		return out
	}
	if err := put(bob.ID, admin.RoleViewer, t0.Add(time.Second), nil); err != nil {
		t.Fatalf("PutMember bob: %v", err)
	}
	carol := &admin.User{ID: "u-carol", Username: "carol", PasswordHash: "$2a$04$carol", CreatedAt: t0}
	if err := put(carol.ID, admin.RoleAdmin, t0.Add(2*time.Second), carol); err != nil {
		t.Fatalf("PutMember with a new admin: %v", err)
	}
	if got, err := as.AdminByUsername(ctx, "carol"); err != nil || got.ID != "u-carol" || got.Operator {
		t.Errorf("admin created by PutMember = %+v, %v; want carol, not an operator", got, err)
	}
	ms, err := as.Members(ctx, "a")
	if err != nil || len(ms) != 3 {
		t.Fatalf("Members = %+v, %v; want 3", ms, err)
	}
	var d diffs
	d.eq("UserID", ms[0].UserID, root.ID)
	d.eq("Username", ms[0].Username, "root")
	d.eq("Email", ms[0].Email, "root@example.com")
	d.eq("Role", ms[0].Role, admin.RoleOwner)
	d.time("CreatedAt", ms[0].CreatedAt, t0)
	d.report(t, "first member")
	d = nil
	d.eq("UserID", ms[2].UserID, "u-carol")
	d.eq("Role", ms[2].Role, admin.RoleAdmin)
	d.time("CreatedAt", ms[2].CreatedAt, t0.Add(2*time.Second))
	d.report(t, "created member")
	if got, err := as.Members(ctx, "other"); err != nil || len(got) != 0 {
		t.Errorf("Members(other) = %+v, %v; want none", got, err)
	}

	// A new admin whose username is taken: ErrConflict, no member, no entry.
	taken := &admin.User{ID: "u-bob2", Username: "bob", PasswordHash: "x", CreatedAt: t0}
	err = adminWrite(db, teamEntry("member.set", "a", "taken"), func(ctx context.Context, tx admin.Tx) error {
		return tx.PutMember(ctx, &admin.Member{AppID: "a", UserID: taken.ID, Role: admin.RoleViewer, CreatedAt: t0}, taken)
	})
	wantErr(t, "PutMember with a taken username", err, apperr.ErrConflict)

	// Changing a role keeps the member's first joining time.
	if err := put(bob.ID, admin.RoleSupport, t0.Add(time.Hour), nil); err != nil {
		t.Fatalf("PutMember (role change): %v", err)
	}
	if got := members(); !reflect.DeepEqual(got, []string{"root:owner", "bob:support", "carol:admin"}) {
		t.Errorf("members after changes = %v", got)
	}
	if ms, _ := as.Members(ctx, "a"); len(ms) == 3 && !ms[1].CreatedAt.Equal(stored(t0.Add(time.Second))) {
		t.Errorf("role change moved bob's joining time to %v", ms[1].CreatedAt)
	}

	// The last owner can be neither demoted nor removed.
	err = put(root.ID, admin.RoleAdmin, t0, nil)
	if !errors.Is(err, admin.ErrLastOwner) {
		t.Errorf("demoting the last owner: %v, want ErrLastOwner", err)
	}
	err = adminWrite(db, teamEntry("member.remove", "a", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.DeleteMember(ctx, "a", root.ID) })
	if !errors.Is(err, admin.ErrLastOwner) {
		t.Errorf("removing the last owner: %v, want ErrLastOwner", err)
	}
	if got := members(); !reflect.DeepEqual(got, []string{"root:owner", "bob:support", "carol:admin"}) {
		t.Errorf("members after refused changes = %v", got)
	}
	// A second owner: now the first may step down and go.
	if err := put(bob.ID, admin.RoleOwner, t0, nil); err != nil {
		t.Fatal(err)
	}
	if err := put(root.ID, admin.RoleViewer, t0, nil); err != nil {
		t.Errorf("demoting one of two owners: %v", err)
	}
	if err := adminWrite(db, teamEntry("member.remove", "a", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.DeleteMember(ctx, "a", root.ID) }); err != nil {
		t.Errorf("removing a non-owner: %v", err)
	}
	if got := members(); !reflect.DeepEqual(got, []string{"bob:owner", "carol:admin"}) {
		t.Errorf("members after root left = %v", got)
	}
	err = adminWrite(db, teamEntry("member.remove", "a", "bob"), func(ctx context.Context, tx admin.Tx) error { return tx.DeleteMember(ctx, "a", bob.ID) })
	if !errors.Is(err, admin.ErrLastOwner) {
		t.Errorf("removing the new last owner: %v, want ErrLastOwner", err)
	}
	// Not a member, or no such app: ErrNotFound.
	err = adminWrite(db, teamEntry("member.remove", "a", "root-again"), func(ctx context.Context, tx admin.Tx) error { return tx.DeleteMember(ctx, "a", root.ID) })
	wantErr(t, "DeleteMember(not a member)", err, apperr.ErrNotFound)
	err = adminWrite(db, teamEntry("member.remove", "missing", "bob"), func(ctx context.Context, tx admin.Tx) error { return tx.DeleteMember(ctx, "missing", bob.ID) })
	wantErr(t, "DeleteMember(missing app)", err, apperr.ErrNotFound)
	err = adminWrite(db, teamEntry("member.set", "missing", "bob"), func(ctx context.Context, tx admin.Tx) error {
		return tx.PutMember(ctx, &admin.Member{AppID: "missing", UserID: bob.ID, Role: admin.RoleOwner, CreatedAt: t0}, nil)
	})
	wantErr(t, "PutMember(missing app)", err, apperr.ErrNotFound)

	// Only the changes that happened were audited.
	got := teamAudit(t, db, "member.set")
	want := []string{"u-root viewer", "u-bob owner", "u-bob support", "u-carol admin", "u-bob viewer"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("member.set audit entries = %v, want %v", got, want)
	}
	if got := teamAudit(t, db, "member.remove"); !reflect.DeepEqual(got, []string{"root"}) {
		t.Errorf("member.remove audit entries = %v, want root's only", got)
	}
	// Deleting an app takes its team with it.
	inTx(t, db, func(ctx context.Context, tx storeTx) error { return tx.DeleteApp(ctx, "a") })
	if got, err := as.Roles(ctx, bob.ID); err != nil || len(got) != 0 {
		t.Errorf("Roles after the app was deleted = %v, %v; want none", got, err)
	}
}

// adminWrite runs fn in an admin transaction and, when it succeeds, adds e
// in the same transaction, as the admin service does; it returns the
// transaction's error.
func adminWrite(db *store.DB, e audit.Entry, fn func(ctx context.Context, tx admin.Tx) error) error {
	ctx := context.Background()
	return db.AdminStore().InTx(ctx, func(tx admin.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		return tx.AddAudit(ctx, e)
	})
}

// AdminByIDForUpdate reads an admin (TOTP secrets opened) inside an admin
// transaction and locks its row: concurrent read-modify-write transactions
// of one admin lose no change (SQLite's one writer serialises them,
// PostgreSQL's FOR UPDATE makes the later one read the earlier's commit).
// A missing admin is ErrNotFound.
func testTeamAdminForUpdate(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	u := teamAdmin(t, db, "root")
	u.Email, u.TOTPSecret, u.TOTPPending = "root@example.com", "SECRET", "PENDING"
	if err := adminWrite(db, teamEntry("admin.2fa.enrol", "", "root"), func(ctx context.Context, tx admin.Tx) error { return tx.UpdateAdmin(ctx, u, nil) }); err != nil {
		t.Fatal(err)
	}
	err := as.InTx(ctx, func(tx admin.Tx) error {
		got, err := tx.AdminByIDForUpdate(ctx, u.ID)
		if err != nil {
			return err
		}
		var d diffs
		d.eq("Username", got.Username, "root")
		d.eq("Email", got.Email, "root@example.com")
		d.eq("PasswordHash", got.PasswordHash, u.PasswordHash)
		d.eq("TOTPSecret", got.TOTPSecret, "SECRET")
		d.eq("TOTPPending", got.TOTPPending, "PENDING")
		d.time("CreatedAt", got.CreatedAt, t0)
		d.report(t, "AdminByIDForUpdate")
		return nil
	})
	if err != nil {
		t.Fatalf("InTx: %v", err)
	}
	err = as.InTx(ctx, func(tx admin.Tx) error {
		_, err := tx.AdminByIDForUpdate(ctx, "u-missing")
		return err
	})
	wantErr(t, "AdminByIDForUpdate(missing)", err, apperr.ErrNotFound)

	const workers, iterations = 2, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range iterations {
				err := as.InTx(ctx, func(tx admin.Tx) error {
					cur, err := tx.AdminByIDForUpdate(ctx, u.ID)
					if err != nil {
						return err
					}
					cur.TokenGen++
					if err := tx.UpdateAdmin(ctx, cur, nil); err != nil {
						return err
					}
					return tx.AddAudit(ctx, teamEntry("admin.password", "", "root"))
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
		t.Fatalf("increment: %v", err)
	}
	got, err := as.AdminByID(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(workers * iterations); got.TokenGen != want {
		t.Errorf("after %d concurrent increments token_gen = %d, want %d (updates lost)", want, got.TokenGen, want)
	}
	if got.TOTPSecret != "SECRET" || got.Email != "root@example.com" {
		t.Errorf("fields the increments did not touch changed: %+v", got)
	}
	if n := len(teamAudit(t, db, "admin.password")); n != workers*iterations {
		t.Errorf("%d audit entries for %d committed changes", n, workers*iterations)
	}
}

// An admin transaction that fails rolls back every write it made —
// admin, account change, recovery codes, sign-out, token, revocation,
// member — with its audit entry and event.
func testTeamInTxRollsBack(t *testing.T, db *store.DB) {
	ctx := context.Background()
	as := db.AdminStore()
	root := teamAdmin(t, db, "root")
	teamAppWithOwner(t, db, "a", root.ID)
	if err := adminWrite(db, teamEntry("token.create", "", "tok-1"), func(ctx context.Context, tx admin.Tx) error {
		return tx.InsertToken(ctx, &admin.Token{ID: "tok-1", UserID: root.ID, Name: "ci", Hint: "kwp_abcd", CreatedAt: t0}, "hash-1")
	}); err != nil {
		t.Fatal(err)
	}
	err := as.InTx(ctx, func(tx admin.Tx) error {
		fresh := &admin.User{ID: "u-carol", Username: "carol", PasswordHash: "x", CreatedAt: t0}
		if err := tx.InsertAdmin(ctx, &admin.User{ID: "u-dave", Username: "dave", PasswordHash: "x", CreatedAt: t0}); err != nil {
			return err
		}
		cur, err := tx.AdminByIDForUpdate(ctx, root.ID)
		if err != nil {
			return err
		}
		cur.PasswordHash, cur.TokenGen = "changed", cur.TokenGen+1
		if err := tx.UpdateAdmin(ctx, cur, []string{"hz"}); err != nil {
			return err
		}
		if err := tx.RevokeJWT(ctx, "jti-x", t0.Add(time.Hour)); err != nil {
			return err
		}
		if err := tx.InsertToken(ctx, &admin.Token{ID: "tok-2", UserID: root.ID, Name: "gone", Hint: "kwp_gone", CreatedAt: t0}, "hash-2"); err != nil {
			return err
		}
		if err := tx.RevokeToken(ctx, root.ID, "tok-1", t0); err != nil {
			return err
		}
		if err := tx.PutMember(ctx, &admin.Member{AppID: "a", UserID: fresh.ID, Role: admin.RoleViewer, CreatedAt: t0}, fresh); err != nil {
			return err
		}
		if err := tx.AddAudit(ctx, teamEntry("admin.rolled_back", "", "root")); err != nil {
			return err
		}
		if err := tx.AddEvent(ctx, event.Event{Type: "admin.rolled_back", CreatedAt: t0}); err != nil {
			return err
		}
		return fmt.Errorf("wrapped: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("InTx returned %v, want fn's error", err)
	}
	for _, name := range []string{"dave", "carol"} {
		_, err := as.AdminByUsername(ctx, name)
		wantErr(t, "admin "+name+" inserted in a rolled-back tx", err, apperr.ErrNotFound)
	}
	got, err := as.AdminByID(ctx, root.ID)
	if err != nil || got.PasswordHash != root.PasswordHash || got.TokenGen != 0 {
		t.Errorf("root after a rolled-back change = %+v, %v; want unchanged", got, err)
	}
	if ok, err := as.UseRecoveryCode(ctx, root.ID, "hz", t0); err != nil || ok {
		t.Errorf("recovery code of a rolled-back tx = %v, %v; want none", ok, err)
	}
	if _, revoked, err := as.AdminForJWT(ctx, root.ID, "jti-x"); err != nil || revoked {
		t.Errorf("JWT signed out in a rolled-back tx: revoked = %v, %v", revoked, err)
	}
	if list, err := as.Tokens(ctx, root.ID); err != nil || len(list) != 1 || list[0].RevokedAt != nil {
		t.Errorf("tokens after a rolled-back tx = %+v, %v; want tok-1 only, not revoked", list, err)
	}
	if ms, err := as.Members(ctx, "a"); err != nil || len(ms) != 1 {
		t.Errorf("members after a rolled-back tx = %+v, %v; want the owner only", ms, err)
	}
	if got := teamAudit(t, db, "admin.rolled_back"); len(got) != 0 {
		t.Errorf("audit entries of a rolled-back tx: %v", got)
	}
	if evs, err := db.Events(ctx, 0, 100); err != nil || len(evs) != 0 {
		t.Errorf("events of a rolled-back tx = %+v, %v; want none", evs, err)
	}
}
