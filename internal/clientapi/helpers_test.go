package clientapi_test

import (
	"testing"

	"github.com/keyward/keyward/internal/envelope"
	"github.com/keyward/keyward/internal/kwtest"
)

// Helpers only the client API's black-box tests use; the ones tests of
// other surfaces share are kwtest's (expect.go, surface.go).

// clInner returns the decrypted inner JSON of a sealed reply, byte for byte.
func clInner(t testing.TB, a *kwtest.App, r *kwtest.Reply) []byte {
	t.Helper()
	if !r.Sealed {
		t.Fatalf("reply is not sealed: %s", r)
	}
	env, err := envelope.Parse(r.Raw)
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := a.Keys.Verify(env, a.S.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return plain
}

// clSub returns a view of s whose helpers report to t, for subtests sharing
// one server.
func clSub(t testing.TB, s *kwtest.Server) *kwtest.Server {
	c := *s
	c.T = t
	return &c
}

// clAppOn returns a view of a whose helpers report to t.
func clAppOn(t testing.TB, a *kwtest.App) *kwtest.App {
	c := *a
	c.S = clSub(t, a.S)
	return &c
}
