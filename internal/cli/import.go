package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/license"
)

// importCmd imports records made elsewhere.
type importCmd struct {
	Keys importKeysCmd `cmd:"" help:"Import license keys from a CSV or JSON file (dry run unless --apply; --merge updates keys the app has)."`
}

type importKeysCmd struct {
	config.Database `embed:""`
	App             string `name:"app" required:"" help:"ID of the app the keys go to."`
	File            string `name:"file" required:"" type:"existingfile" help:"The key file: a CSV (the export's columns or their aliases, such as key, status, expires, hwid) or JSON (an array of key objects, or the reply of GET keys.php)."`
	Format          string `name:"format" enum:",csv,json" default:"" help:"csv or json; without it, a .json or .csv name says, else the first character ('[' or '{' is JSON)."`
	Merge           bool   `name:"merge" help:"Update the keys the app already has (status, expiry, seats, note, features; devices in the file are added, none removed) instead of refusing them."`
	Apply           bool   `name:"apply" help:"Import (all keys in one transaction, or nothing when any key has a problem); without it, only report."`
}

func (c *importKeysCmd) Run(e *env) error {
	format := c.Format
	if format == "" {
		switch strings.ToLower(filepath.Ext(c.File)) {
		case ".json":
			format = license.FormatJSON
		case ".csv":
			format = license.FormatCSV
		}
	}
	f, err := os.Open(c.File)
	if err != nil {
		return err
	}
	defer f.Close()
	db, err := openDB(e.ctx, config.Config{Database: c.Database})
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Migrate(e.ctx); err != nil {
		return err
	}
	// Run elsewhere than the server (PostgreSQL from a workstation) without
	// the server's key file, the app's secret would not open: say which
	// file is wanted rather than that one value is sealed under another key.
	if err := db.CheckKeys(e.ctx); err != nil {
		return err
	}
	svc := license.NewService(db.LicenseStore(), clockOf(e.ctx), nil, license.Config{AppCacheTTL: -1})
	actor := audit.Actor{Kind: "cli", Name: "keyward import keys"}
	rep, err := svc.ImportKeys(e.ctx, actor, c.App, f, license.ImportOptions{Format: format, Merge: c.Merge, Apply: c.Apply})
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Code == license.CodeImportRejected {
		rep, _ = ae.Fields["report"].(*license.ImportReport)
		err = nil
	}
	if err != nil {
		if errors.As(err, &ae) && ae.Kind != apperr.Internal {
			return errors.New(ae.Message)
		}
		return err
	}
	printImport(e, c.File, c.App, rep)
	switch {
	case rep.ErrorCount > 0:
		return fmt.Errorf("%d problems in %s; nothing was imported", rep.ErrorCount, c.File)
	case !c.Apply:
		fmt.Fprintf(e.stdout, "Dry run: nothing changed. %d keys would be added and %d updated; run again with --apply.\n", rep.ToInsert, rep.ToUpdate)
	default:
		fmt.Fprintf(e.stdout, "Imported into app %s: %d keys added, %d updated, %d unchanged.\n", c.App, rep.Imported, rep.Updated, rep.Unchanged)
	}
	return nil
}

func printImport(e *env, file, app string, rep *license.ImportReport) {
	fmt.Fprintf(e.stdout, "%s (%s) → app %s: %d keys, %d valid, %d to add, %d to update, %d unchanged, %d devices to bind\n",
		file, rep.Format, app, rep.Rows, rep.Valid, rep.ToInsert, rep.ToUpdate, rep.Unchanged, rep.Devices)
	if len(rep.Ignored) > 0 {
		fmt.Fprintf(e.stdout, "  not read: %s\n", strings.Join(rep.Ignored, ", "))
	}
	statuses := make([]string, 0, len(rep.ByStatus))
	for s := range rep.ByStatus {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	for _, s := range statuses {
		fmt.Fprintf(e.stdout, "  %-8s %d\n", s, rep.ByStatus[s])
	}
	for _, ch := range rep.Changes {
		fmt.Fprintf(e.stdout, "line %d: %s\n", ch.Line, ch.LicenseKey)
		for _, f := range ch.Fields {
			if f.Field == "hwids" {
				fmt.Fprintf(e.stdout, "  hwids: + %s (bound: %s)\n", f.New, orNone(f.Old))
				continue
			}
			fmt.Fprintf(e.stdout, "  %s: %s → %s\n", f.Field, orNone(f.Old), orNone(f.New))
		}
	}
	if n := rep.ToUpdate - len(rep.Changes); n > 0 && rep.ErrorCount == 0 {
		fmt.Fprintf(e.stdout, "… and %d more keys to update\n", n)
	}
	for _, er := range rep.Errors {
		where := fmt.Sprintf("line %d", er.Line)
		if er.LicenseKey != "" {
			where += " " + er.LicenseKey
		}
		if er.Field != "" {
			where += " (" + er.Field + ")"
		}
		fmt.Fprintf(e.stderr, "%s: %s\n", where, er.Message)
	}
	if n := rep.ErrorCount - len(rep.Errors); n > 0 {
		fmt.Fprintf(e.stderr, "… and %d more problems\n", n)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
