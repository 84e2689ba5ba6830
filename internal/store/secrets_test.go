package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/internal/seal"
	"github.com/keyward/keyward/internal/store"
)

func secretApp(id, secret string) *license.App {
	t := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	return &license.App{ID: id, Name: id, Version: "1.0.0", Secret: secret, Settings: license.DefaultSettings(), CreatedAt: t, UpdatedAt: t}
}

// Sealed values are bound to their row: a ciphertext copied to another row
// does not open. The start-up sealing of plaintext rows is idempotent, and a
// database opened with another key file is refused by CheckKeys, naming
// the key it needs.
func TestSealedSecretsAtTheStore(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			o := e.migrated(t)
			db := openMigrated(t, o)
			raw := e.raw(t, o)
			q := func(s string) string {
				if e.name == "postgres" {
					for i := 1; strings.Contains(s, "?"); i++ {
						s = strings.Replace(s, "?", "$"+string(rune('0'+i)), 1)
					}
				}
				return s
			}
			if err := db.CheckKeys(ctx); err != nil {
				t.Fatal(err)
			}
			ls := db.LicenseStore()
			for _, a := range []*license.App{secretApp("app-a", "secret-of-a"), secretApp("app-b", "secret-of-b")} {
				if err := ls.InTx(ctx, func(tx license.Tx) error { return tx.InsertApp(ctx, a, "hash-"+a.ID) }); err != nil {
					t.Fatal(err)
				}
			}
			var sealedA string
			if err := raw.QueryRow(q(`SELECT secret FROM apps WHERE id = ?`), "app-a").Scan(&sealedA); err != nil {
				t.Fatal(err)
			}
			if !seal.IsSealed(sealedA) || strings.Contains(sealedA, "secret-of-a") {
				t.Fatalf("apps.secret stored as %q", sealedA)
			}
			// A's ciphertext in B's row does not open as B's secret.
			if _, err := raw.Exec(q(`UPDATE apps SET secret = ? WHERE id = ?`), sealedA, "app-b"); err != nil {
				t.Fatal(err)
			}
			if a, err := ls.App(ctx, "app-b"); !errors.Is(err, seal.ErrOpen) {
				t.Fatalf("App(app-b) with app-a's ciphertext = %v, %v; want ErrOpen", a, err)
			}

			// Legacy plaintext: read as is, then sealed once at start.
			if _, err := raw.Exec(q(`UPDATE apps SET secret = ? WHERE id = ?`), "secret-of-b", "app-b"); err != nil {
				t.Fatal(err)
			}
			if a, err := ls.App(ctx, "app-b"); err != nil || a.Secret != "secret-of-b" {
				t.Fatalf("App(app-b) in plaintext = %v, %v", a, err)
			}
			n, err := db.SealSecrets(ctx)
			if err != nil || n != 1 {
				t.Fatalf("SealSecrets = %d, %v; want the one plaintext value", n, err)
			}
			if n, err := db.SealSecrets(ctx); err != nil || n != 0 {
				t.Fatalf("SealSecrets again = %d, %v; want nothing to do", n, err)
			}
			var sealedB string
			if err := raw.QueryRow(q(`SELECT secret FROM apps WHERE id = ?`), "app-b").Scan(&sealedB); err != nil || !seal.IsSealed(sealedB) {
				t.Fatalf("apps.secret of app-b after SealSecrets = %q, %v", sealedB, err)
			}
			if a, err := ls.AppBySecretHash(ctx, "hash-app-b"); err != nil || a.Secret != "secret-of-b" {
				t.Fatalf("AppBySecretHash after sealing = %v, %v", a, err)
			}

			// Another key file: refused, naming the database's key.
			k, _ := seal.Generate()
			other, _ := seal.New(k)
			o.Keys = other
			db2, err := store.Open(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer db2.Close()
			if err := db2.CheckKeys(ctx); err == nil || !strings.Contains(err.Error(), db.Keys().PrimaryID()) {
				t.Fatalf("CheckKeys with another key = %v; want a refusal naming %s", err, db.Keys().PrimaryID())
			}
		})
	}
}
