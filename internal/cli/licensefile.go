package cli

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/licensefile"
	"github.com/keyward/keyward/internal/signing"
	"github.com/keyward/keyward/wire"
)

// licenseFileCmd manages the Ed25519 keys that sign offline license files,
// in the license-file subdirectory of the signing directory. keyward
// creates the first one itself at first start; these commands rotate.
type licenseFileCmd struct {
	Create   lfCreateCmd   `cmd:"" aliases:"init" help:"Generate an Ed25519 license-file key (the first becomes active; later ones are announced until activated)."`
	List     lfListCmd     `cmd:"" help:"List the license-file keys."`
	Public   lfPublicCmd   `cmd:"" help:"Print the active (or --id) public key as PEM, for apps to pin."`
	Activate lfActivateCmd `cmd:"" help:"Sign license files with key ID from now on (restart keyward to apply)."`
	Retire   lfRetireCmd   `cmd:"" help:"Delete key ID (not the active one). Files it signed stop verifying where apps drop its pin: retire after their valid_until."`
}

func (d signingDir) licensePath() string { return signing.LicenseKeyDir(d.path()) }

type lfCreateCmd struct{ signingDir }

func (c *lfCreateCmd) Run(e *env) error {
	k, err := signing.CreateLicenseKey(c.licensePath())
	if err != nil {
		return err
	}
	set, err := signing.LoadLicenseKeys(c.licensePath())
	if err != nil {
		return err
	}
	state := "announced (served by public-keys.php for apps to pin; not signing yet: `keyward keys license-file activate " + k.ID + "`, then restart)"
	if set.Active != nil && set.Active.ID == k.ID {
		state = "active (restart keyward to sign with it)"
	}
	fmt.Fprintf(e.stdout, "Created license-file key %s in %s, %s.\n%s", k.ID, c.licensePath(), state, k.PublicPEM)
	return nil
}

type lfListCmd struct{ signingDir }

func (c *lfListCmd) Run(e *env) error {
	set, err := signing.LoadLicenseKeys(c.licensePath())
	if err != nil {
		return err
	}
	if set == nil {
		fmt.Fprintf(e.stdout, "No license-file keys in %s (keyward creates one at its next start).\n", c.licensePath())
		return nil
	}
	for _, k := range set.Keys {
		state := "announced"
		if k == set.Active {
			state = "active"
		}
		fmt.Fprintf(e.stdout, "%s  %-9s  Ed25519  SPKI SHA-256 %s\n", k.ID, state, k.SPKISHA256)
	}
	return nil
}

type lfPublicCmd struct {
	signingDir
	ID string `name:"id" help:"Key ID (default: the active key)."`
}

func (c *lfPublicCmd) Run(e *env) error {
	set, err := signing.LoadLicenseKeys(c.licensePath())
	if err != nil {
		return err
	}
	if set == nil {
		return fmt.Errorf("no license-file key in %s; run `keyward keys license-file create`", c.licensePath())
	}
	k := set.Active
	if c.ID != "" {
		if k = set.Key(c.ID); k == nil {
			return fmt.Errorf("no license-file key %q in %s", c.ID, c.licensePath())
		}
	}
	fmt.Fprintf(e.stdout, "%s", k.PublicPEM)
	return nil
}

type lfActivateCmd struct {
	signingDir
	ID string `arg:"" help:"Key ID (or a prefix of at least 8 characters)."`
}

func (c *lfActivateCmd) Run(e *env) error {
	if err := signing.ActivateLicenseKey(c.licensePath(), c.ID); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "License-file key %s is active; restart keyward to sign with it.\n", c.ID)
	return nil
}

type lfRetireCmd struct {
	signingDir
	ID string `arg:"" help:"Key ID (or a prefix of at least 8 characters)."`
}

func (c *lfRetireCmd) Run(e *env) error {
	if err := signing.RetireLicenseKey(c.licensePath(), c.ID); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "License-file key %s retired.\n", c.ID)
	return nil
}

// licenseCmd works on license documents offline.
type licenseCmd struct {
	Verify licenseVerifyCmd `cmd:"" help:"Verify an offline license file: exit 0 when genuine, unexpired (and for --hwid's device, --app's app), 1 otherwise, saying why."`
}

type licenseVerifyCmd struct {
	PublicKey string `name:"public-key" required:"" type:"existingfile" help:"The public keys to trust: PEM (as keyward keys license-file public prints, or several blocks) or the JSON of /api/app/public-keys.php."`
	File      string `name:"file" required:"" help:"The license file (- for standard input)."`
	HWID      string `name:"hwid" help:"Require the file to be for this device."`
	App       string `name:"app" help:"Require the file to be for this app id."`
	At        string `name:"at" help:"Verify as of this RFC 3339 time instead of now."`
}

func (c *licenseVerifyCmd) Run(e *env) error {
	raw, err := os.ReadFile(c.PublicKey)
	if err != nil {
		return err
	}
	pubs, err := readPublicKeys(raw)
	if err != nil {
		return fmt.Errorf("--public-key %s: %w", c.PublicKey, err)
	}
	var text []byte
	if c.File == "-" {
		text, err = readAllLimited(os.Stdin, licensefile.MaxSize+1)
	} else {
		text, err = readFileLimited(c.File, licensefile.MaxSize+1)
	}
	if err != nil {
		return err
	}
	now := time.Now()
	if c.At != "" {
		if now, err = time.Parse(time.RFC3339, c.At); err != nil {
			return fmt.Errorf("--at: %w", err)
		}
	}
	f, err := licensefile.Parse(string(text))
	if err == nil {
		err = f.Check(pubs, licensefile.Expect{Now: now, AppID: c.App, HWID: c.HWID})
	}
	if err != nil {
		return fmt.Errorf("license file NOT valid (%s): %w", licensefile.Reason(err), err)
	}
	cl := f.Claims
	expires := "never (lifetime)"
	if cl.ExpiresAt != nil {
		expires = cl.ExpiresAt.UTC().Format(time.RFC3339)
	}
	device := "any device (no --hwid given)"
	if c.HWID != "" {
		device = "this device"
	}
	fmt.Fprintf(e.stdout, "License file is genuine and valid for %s.\n  app:           %s\n  key:           %s (id %d, %s, %s)\n  device:        %s\n  features:      %s\n  issued at:     %s\n  valid until:   %s\n  license ends:  %s\n  signed by:     %s\n",
		device, cl.AppID, cl.KeyHint, cl.KeyID, cl.KeyType, cl.Status, cl.HWID, cl.Features, cl.IssuedAt.UTC().Format(time.RFC3339),
		cl.ValidUntil.UTC().Format(time.RFC3339), expires, cl.Kid)
	if cl.Floating {
		fmt.Fprintf(e.stdout, "  floating seat: borrowed (%s)\n", cl.BorrowID)
	}
	return nil
}

// readPublicKeys reads trusted license-file keys from PEM or from the JSON
// public-keys.php serves (its license-file keys only).
func readPublicKeys(raw []byte) (map[string]ed25519.PublicKey, error) {
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		var res wire.PublicKeysReply
		if err := json.Unmarshal(t, &res); err != nil {
			return nil, fmt.Errorf("not the public-keys.php JSON: %w", err)
		}
		var pems []string
		for _, k := range res.Keys {
			if k.Use == wire.UseLicenseFile {
				pems = append(pems, k.PublicKey)
			}
		}
		if len(pems) == 0 {
			return nil, errors.New("the JSON lists no license-file key")
		}
		raw = []byte(strings.Join(pems, ""))
	}
	return licensefile.ParsePublicKeys(raw)
}

// readFileLimited reads at most limit bytes of the file at path.
func readFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllLimited(f, limit)
}

// readAllLimited reads at most limit bytes of r (Parse refuses more than
// licensefile.MaxSize, so limit = MaxSize+1 lets it say so).
func readAllLimited(r io.Reader, limit int64) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, limit))
}
