package cli

import (
	"errors"
	"fmt"

	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/seal"
	"github.com/keyward/keyward/internal/store"
)

type secretKeyCmd struct {
	Rotate secretRotateCmd `cmd:"" help:"Generate a new secret key, re-encrypt every stored secret with it and make it the key file's only key (stop every keyward process first)."`
}

type secretRotateCmd struct {
	config.Database `embed:""`
}

// Run rotates the key-encryption key. Crash-safe order: the key file first
// holds the new key (primary) and the old one, so whatever was re-sealed so
// far opens; every value is re-sealed under the new key; only then does the
// file keep the new key alone. Running it again after a failure finishes
// the job (with yet another new key).
func (c *secretRotateCmd) Run(e *env) error {
	path := c.SecretKeyPath()
	old, err := seal.Load(path)
	if err != nil {
		return fmt.Errorf("secret key file: %w", err)
	}
	db, err := store.Open(e.ctx, store.Options{DataDir: c.Data, URL: c.DatabaseURL, Synchronous: c.SQLiteSynchronous, Keys: old})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.CheckSchema(e.ctx); err != nil {
		return err
	}
	// The database must be sealed with a key of this file (the primary
	// check row may be under a key an earlier, interrupted rotation added).
	if err := db.CheckKeys(e.ctx); err != nil {
		return err
	}
	raw, err := seal.Generate()
	if err != nil {
		return err
	}
	fresh, err := seal.New(raw)
	if err != nil {
		return err
	}
	both, err := old.With(fresh)
	if err != nil {
		return err
	}
	if err := seal.Write(path, both); err != nil {
		return fmt.Errorf("write the secret key file: %w", err)
	}
	db.SetKeys(both)
	n, err := db.RotateSecrets(e.ctx)
	if err != nil {
		return errors.Join(err, fmt.Errorf("%s holds the new key %s and the old ones: every value opens; run the rotation again", path, fresh.PrimaryID()))
	}
	if err := seal.Write(path, fresh.Only()); err != nil {
		return fmt.Errorf("write the secret key file: %w", err)
	}
	fmt.Fprintf(e.stdout, "re-encrypted %d stored secrets with the new secret key %s (was %v).\n"+
		"%s now holds the new key only: copy it to every keyward process sharing this database, then start them.\n",
		n, fresh.PrimaryID(), old.IDs(), path)
	return nil
}
