package admin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/store"
	"github.com/keyward/keyward/wire"
)

// A password reset moves the token generation on by exactly one, in the
// transaction that writes its audit entry, and ends the sign-ins of before.
// Raced by password changes of the same admin (and by each other), on the
// real store: every reset succeeds; no change is lost (the generation
// moved on once per committed change or reset, and each has exactly one
// audit entry, a refused change none); the stored password is the one of
// a committed change or reset; and a token minted by a change verifies
// only if that change was the last write — a reset after it ends it.
func TestResetPasswordRacingChanges(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		srv := kwtest.Start(t, kwtest.Options{Engine: engine, Configure: func(c *config.Config) {
			c.LockoutFailures, c.LockoutIPFailures = 0, 0 // refused changes are expected here
		}})
		ctx := context.Background()
		svc, as := srv.Admins, srv.DB.AdminStore()
		cli := audit.Actor{Kind: "cli", Name: "keyward admin reset-password"}
		gen := func() int64 {
			t.Helper()
			u, err := as.AdminByUsername(ctx, "admin")
			if err != nil {
				t.Fatal(err)
			}
			return u.TokenGen
		}
		audits := func(action string) []audit.Entry { // newest first
			t.Helper()
			es, err := srv.DB.Audit(ctx, store.AuditFilter{Action: action, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return es
		}
		entries := func(action string) int { t.Helper(); return len(audits(action)) }

		login, err := svc.Login(ctx, "admin", kwtest.AdminPassword, "192.0.2.1")
		if err != nil {
			t.Fatal(err)
		}
		p, err := svc.Verify(ctx, login.Token)
		if err != nil {
			t.Fatal(err)
		}
		before := gen()
		res, err := svc.ResetPassword(ctx, cli, "admin", "reset-password-0", false)
		if err != nil {
			t.Fatalf("ResetPassword: %v", err)
		}
		if g := gen(); g != before+1 || res.User.TokenGen != g {
			t.Fatalf("token generation after a reset = %d (result %d), want %d", g, res.User.TokenGen, before+1)
		}
		if _, err := svc.Verify(ctx, login.Token); !isCode(err, wire.CodeUnauthorized) {
			t.Fatalf("a token of before the reset: %v, want UNAUTHORIZED", err)
		}
		if n := entries("admin.password.reset"); n != 1 {
			t.Fatalf("%d admin.password.reset entries after one reset", n)
		}

		current := "reset-password-0"
		resets, changes := 1, 0
		for round := range 3 {
			const nChanges, nResets = 4, 2
			start := make(chan struct{})
			var wg sync.WaitGroup
			changeTok := make([]string, nChanges)
			changeErr := make([]error, nChanges)
			resetErr := make([]error, nResets)
			for i := range nChanges {
				wg.Go(func() {
					<-start
					changeTok[i], changeErr[i] = svc.ChangePassword(ctx, p, "192.0.2.1", current, fmt.Sprintf("changed-%d-%d", round, i))
				})
			}
			for j := range nResets {
				wg.Go(func() {
					<-start
					_, resetErr[j] = svc.ResetPassword(ctx, cli, "admin", fmt.Sprintf("reset-%d-%d", round, j), false)
				})
			}
			g0 := gen()
			var lastID int64
			if es := audits("admin."); len(es) > 0 {
				lastID = es[0].ID
			}
			close(start)
			wg.Wait()

			committed := nResets
			var candidates []string
			for j, err := range resetErr {
				if err != nil {
					t.Fatalf("round %d: reset %d: %v", round, j, err)
				}
				candidates = append(candidates, fmt.Sprintf("reset-%d-%d", round, j))
			}
			for i, err := range changeErr {
				switch {
				case err == nil:
					committed++
					candidates = append(candidates, fmt.Sprintf("changed-%d-%d", round, i))
				case isCode(err, wire.CodeInvalidCredentials), isCode(err, wire.CodeUnauthorized):
					// The password checked was no longer current, or the
					// account's sign-ins ended before the change committed.
				default:
					t.Fatalf("round %d: change %d: %v", round, i, err)
				}
			}
			changes += committed - nResets
			resets += nResets
			if g := gen(); g != g0+int64(committed) {
				t.Errorf("round %d: token generation moved from %d to %d over %d committed changes and resets (a change lost or counted twice)", round, g0, g, committed)
			}
			if n := entries("admin.password"); n != changes {
				t.Errorf("round %d: %d admin.password entries, %d committed changes", round, n, changes)
			}
			if n := entries("admin.password.reset"); n != resets {
				t.Errorf("round %d: %d admin.password.reset entries, %d resets", round, n, resets)
			}

			// Every change of the round checked the password of before it,
			// so one committed change, or a reset, ends the others, and no
			// change commits after a reset (it would undo the reset with a
			// password the reset replaced). Each entry is written under the
			// account's row lock, so entry ids follow the commit order.
			if committed-nResets > 1 {
				t.Errorf("round %d: %d changes checked against the same password all committed", round, committed-nResets)
			}
			var order []string
			es := audits("admin.")
			for k := len(es) - 1; k >= 0; k-- {
				if es[k].ID > lastID {
					order = append(order, es[k].Action)
				}
			}
			for k := range order {
				if order[k] == "admin.password" && slices.Contains(order[:k], "admin.password.reset") {
					t.Errorf("round %d: a password change committed after a reset: %v", round, order)
					break
				}
			}

			u, err := as.AdminByUsername(ctx, "admin")
			if err != nil {
				t.Fatal(err)
			}
			current = ""
			for _, c := range candidates {
				if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(c)) == nil {
					current = c
				}
			}
			if current == "" {
				t.Fatalf("round %d: the stored password is none of the committed ones %v", round, candidates)
			}
			for i, tok := range changeTok {
				if tok == "" {
					continue
				}
				_, err := svc.Verify(ctx, tok)
				last := current == fmt.Sprintf("changed-%d-%d", round, i)
				if last && err != nil {
					t.Errorf("round %d: the token of the last change (%d) is refused: %v", round, i, err)
				}
				if !last && err == nil {
					t.Errorf("round %d: change %d was overwritten (now %q) but its token still verifies", round, i, current)
				}
			}
			t.Logf("round %d: %d of %d changes committed; password now %s", round, committed-nResets, nChanges, current)
		}
	})
}

// isCode reports whether err is an apperr with the wire code.
func isCode(err error, code string) bool {
	var ae *apperr.Error
	return errors.As(err, &ae) && ae.Code == code
}
