package cli

import (
	"errors"
	"fmt"

	"github.com/keyward/keyward/internal/backup"
	"github.com/keyward/keyward/internal/config"
)

// opsPaths are the flags that locate an installation's files.
type opsPaths struct {
	config.Database `embed:""`
	BlobDir         string `name:"blob-dir" env:"KEYWARD_BLOB_DIR" help:"Directory of update artifacts; default <data>/blobs."`
	config.Signing  `embed:""`
}

func (p opsPaths) paths() backup.Paths {
	return backup.Paths{Data: p.Data, Blobs: p.BlobDir, Signing: p.SigningPath(p.Data), SecretKey: p.SecretKeyPath()}
}

type backupCmd struct {
	opsPaths
	Out string `name:"out" required:"" help:"Archive to write (tar.gz); replaced atomically."`
}

func (c *backupCmd) Run(e *env) error {
	if c.DatabaseURL != "" {
		return errors.New("backup snapshots SQLite only; for PostgreSQL use pg_dump (docs/operations.md: pg_dump --format=custom --file keyward.dump \"$KEYWARD_DATABASE_URL\") and copy the blob directory or bucket")
	}
	sum, err := backup.Create(e.ctx, c.paths(), c.Out)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s: database %d bytes, %d artifact files (%d bytes), %d signing files\n",
		c.Out, sum.DBBytes, sum.BlobFiles, sum.BlobBytes, sum.SigningFiles)
	return nil
}

type restoreCmd struct {
	opsPaths
	In    string `name:"in" required:"" help:"Archive written by keyward backup."`
	Force bool   `name:"force" help:"Replace a database already in the data directory."`
}

func (c *restoreCmd) Run(e *env) error {
	if c.DatabaseURL != "" {
		return errors.New("restore writes a SQLite data directory; for PostgreSQL use pg_restore (docs/operations.md)")
	}
	sum, err := backup.Restore(e.ctx, c.paths(), c.In, c.Force)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "restored %s into %s: database %d bytes, %d artifact files (%d bytes), %d signing files\n",
		c.In, c.Data, sum.DBBytes, sum.BlobFiles, sum.BlobBytes, sum.SigningFiles)
	return nil
}
