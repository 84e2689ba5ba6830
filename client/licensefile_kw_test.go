package client

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/kwtest"
	"github.com/keyward/keyward/internal/licensefile"
	"github.com/keyward/keyward/wire"
)

// LicenseFile fetches a signed file that verifies for the device with the
// server's published license-file key; OFFLINE_DISABLED is a sealed
// refusal; a floating key's file carries its borrow, which
// ReturnLicenseFile gives back so another machine gets the seat.
func TestLicenseFile(t *testing.T) {
	kwtest.ForEachEngine(t, func(t *testing.T, engine string) {
		ctx := context.Background()
		s, app, c := setup(t, engine, nil)
		key := app.GenerateKeys(1, "lifetime", 0, 1)[0]
		_, err := c.LicenseFile(ctx, key, "hw-1")
		apiErr(t, err, 200, "OFFLINE_DISABLED", true)

		s.MustAdmin("PUT", "/api/admin/apps.php?app_id="+app.ID, map[string]any{"settings": map[string]any{"offline_enabled": true, "offline_ttl_hours": 24}})
		lf, err := c.LicenseFile(ctx, " "+key+" ", "hw-1")
		if err != nil {
			t.Fatal(err)
		}
		if lf.Floating || lf.BorrowID != "" || !lf.ValidUntil.Equal(s.Clock.Now().Add(24*time.Hour)) || lf.FileID == "" {
			t.Fatalf("license file %+v", lf)
		}
		var served wire.PublicKeysReply
		if err := json.Unmarshal(s.Do("GET", "/api/app/public-keys.php", nil, nil).Raw, &served); err != nil {
			t.Fatal(err)
		}
		var pems string
		for _, k := range served.Keys {
			if k.Use == wire.UseLicenseFile {
				pems += k.PublicKey
			}
		}
		pins, err := licensefile.ParsePublicKeys([]byte(pems))
		if err != nil {
			t.Fatal(err)
		}
		f, err := licensefile.Parse(lf.Text)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Check(pins, licensefile.Expect{Now: s.Clock.Now(), AppID: app.ID, HWID: "hw-1"}); err != nil {
			t.Fatalf("the file does not verify: %v", err)
		}
		_, err = c.LicenseFile(ctx, key, "hw-2")
		apiErr(t, err, 200, "HWID_MISMATCH", true)

		// A floating key with one seat: the borrow holds it until returned.
		r := s.MustAdmin("POST", "/api/admin/keys.php", map[string]any{"app_id": app.ID, "count": 1, "key_type": "lifetime", "max_devices": 1, "floating": true})
		fk := r.Body["keys"].([]any)[0].(map[string]any)["license_key"].(string)
		borrow, err := c.LicenseFile(ctx, fk, "laptop")
		if err != nil || !borrow.Floating || borrow.BorrowID == "" {
			t.Fatalf("borrow %+v %v", borrow, err)
		}
		_, err = c.Login(ctx, fk, "desk")
		apiErr(t, err, 200, "DEVICE_LIMIT", true)
		if err := c.ReturnLicenseFile(ctx, borrow.BorrowID); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Login(ctx, fk, "desk"); err != nil {
			t.Fatalf("login after the return: %v", err)
		}
		apiErr(t, c.ReturnLicenseFile(ctx, "no-such-borrow"), 200, "NOT_FOUND", true)
	})
}
