package httpapi_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/kwtest"
)

// BenchmarkAccountLogin measures auth/account-login over real HTTP on SQLite
// at several bcrypt costs, next to the bcrypt comparison alone at the same
// cost: the difference is what the rest of a sign-in (HTTP, lockout read,
// session write) costs, and shows the chosen cost is the dominant term.
// See docs/performance.md.
func BenchmarkAccountLogin(b *testing.B) {
	for _, cost := range []int{4, 8, 10, 12} {
		b.Run(fmt.Sprintf("bcrypt-only/cost=%d", cost), func(b *testing.B) {
			hash, err := bcrypt.GenerateFromPassword([]byte("benchmark-password"), cost)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if bcrypt.CompareHashAndPassword(hash, []byte("benchmark-password")) != nil {
						b.Error("mismatch")
					}
				}
			})
		})
		b.Run(fmt.Sprintf("login/cost=%d", cost), func(b *testing.B) {
			s := kwtest.Start(b, kwtest.Options{Configure: func(c *config.Config) { c.AccountBcryptCost = cost }})
			a := s.CreateApp("bench")
			a.S.MustAdmin("PUT", "/api/admin/apps.php?app_id="+a.ID, map[string]any{"settings": map[string]any{
				"accounts_enabled": true, "account_signup_days": 30, "account_max_devices": 1000}})
			const users = 16
			for i := range users {
				if r := a.Plain("/api/auth/account-register.php", map[string]any{"username": "user" + strconv.Itoa(i),
					"password": "benchmark-password"}); r.Status != 200 {
					b.Fatalf("register: %s", r)
				}
			}
			var next atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					r := a.Plain("/api/auth/account-login.php", map[string]any{"username": "user" + strconv.FormatInt(i%users, 10),
						"password": "benchmark-password", "hwid": "pc-" + strconv.FormatInt(i%500, 10)})
					if r.Status != 200 {
						b.Errorf("login: %s", r)
						return
					}
				}
			})
		})
	}
}
