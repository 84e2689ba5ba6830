package cli

import (
	"fmt"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/signing"
)

// keysCmd manages keys keyward holds: the reply-signing keys, the
// license-file signing keys and the key file encrypting the secrets stored
// in the database.
type keysCmd struct {
	Signing     signingCmd     `cmd:"" help:"Reply-signing keys (PWF-REPLY-V1): init, public, list, activate, retire."`
	LicenseFile licenseFileCmd `cmd:"" name:"license-file" help:"Ed25519 keys signing offline license files (in <signing-dir>/license-file): create, list, public, activate, retire."`
	Secret      secretKeyCmd   `cmd:"" help:"The secret key file (--secret-key-file) encrypting the secrets stored in the database: rotate."`
}

type signingCmd struct {
	Init     signingInitCmd     `cmd:"" help:"Generate an RSA-3072 signing key (the first becomes active; later ones are announced until activated)."`
	Public   signingPublicCmd   `cmd:"" help:"Print the active (or --id) public key as PEM and its SPKI SHA-256."`
	List     signingListCmd     `cmd:"" help:"List the signing keys."`
	Activate signingActivateCmd `cmd:"" help:"Sign with key ID from now on (restart keyward to apply)."`
	Retire   signingRetireCmd   `cmd:"" help:"Delete key ID (not the active one)."`
}

// signingDir is the flags that locate the key directory.
type signingDir struct {
	Data           string `name:"data" default:"./keyward-data" env:"KEYWARD_DATA" help:"Data directory."`
	config.Signing `embed:""`
}

func (d signingDir) path() string { return d.SigningPath(d.Data) }

type signingInitCmd struct{ signingDir }

func (c *signingInitCmd) Run(e *env) error {
	k, err := signing.Init(c.path())
	if err != nil {
		return err
	}
	set, err := signing.Load(c.path())
	if err != nil {
		return err
	}
	state := "announced (not signing yet: `keyward keys signing activate " + k.ID + "`, then restart)"
	if set.Active != nil && set.Active.ID == k.ID {
		state = "active (restart keyward to sign with it)"
	}
	fmt.Fprintf(e.stdout, "Created signing key %s in %s, %s.\nSPKI SHA-256: %s\n%s", k.ID, c.path(), state, k.SPKISHA256, k.PublicPEM)
	return nil
}

type signingPublicCmd struct {
	signingDir
	ID string `name:"id" help:"Key ID (default: the active key)."`
}

func (c *signingPublicCmd) Run(e *env) error {
	set, err := signing.Load(c.path())
	if err != nil {
		return err
	}
	if set == nil {
		return fmt.Errorf("no signing key in %s; run `keyward keys signing init`", c.path())
	}
	k := set.Active
	if c.ID != "" {
		if k = set.Key(c.ID); k == nil {
			return fmt.Errorf("no signing key %q in %s", c.ID, c.path())
		}
	}
	fmt.Fprintf(e.stdout, "%sSPKI SHA-256: %s\n", k.PublicPEM, k.SPKISHA256)
	return nil
}

type signingListCmd struct{ signingDir }

func (c *signingListCmd) Run(e *env) error {
	set, err := signing.Load(c.path())
	if err != nil {
		return err
	}
	if set == nil {
		fmt.Fprintf(e.stdout, "No signing keys in %s: replies are not signed.\n", c.path())
		return nil
	}
	for _, k := range set.Keys {
		state := "announced"
		if k == set.Active {
			state = "active"
		}
		fmt.Fprintf(e.stdout, "%s  %-9s  SPKI SHA-256 %s\n", k.ID, state, k.SPKISHA256)
	}
	return nil
}

type signingActivateCmd struct {
	signingDir
	ID string `arg:"" help:"Key ID (or a prefix of at least 8 characters)."`
}

func (c *signingActivateCmd) Run(e *env) error {
	if err := signing.Activate(c.path(), c.ID); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Key %s is active; restart keyward to sign with it.\n", c.ID)
	return nil
}

type signingRetireCmd struct {
	signingDir
	ID string `arg:"" help:"Key ID (or a prefix of at least 8 characters)."`
}

func (c *signingRetireCmd) Run(e *env) error {
	if err := signing.Retire(c.path(), c.ID); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Key %s retired.\n", c.ID)
	return nil
}
