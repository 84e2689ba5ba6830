package cli

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/license"
)

// importCmd imports records made elsewhere.
type importCmd struct {
	Keys importKeysCmd `cmd:"" help:"Import license keys from a CSV in the export's layout (dry run unless --apply)."`
}

type importKeysCmd struct {
	config.Database `embed:""`
	App             string `name:"app" required:"" help:"ID of the app the keys go to."`
	File            string `name:"file" required:"" type:"existingfile" help:"CSV file: the header of GET keys.php?action=export (license_key,status,key_type,duration,max_devices,activated_at,expires_at,note,features,hwids,created_at), any column order."`
	Apply           bool   `name:"apply" help:"Import (all keys in one transaction, or nothing when any row has a problem); without it, only report."`
}

func (c *importKeysCmd) Run(e *env) error {
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
	svc := license.NewService(db.LicenseStore(), time.Now, nil, license.Config{AppCacheTTL: -1})
	actor := audit.Actor{Kind: "cli", Name: "keyward import keys"}
	rep, err := svc.ImportKeys(e.ctx, actor, c.App, f, c.Apply)
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
		fmt.Fprintf(e.stdout, "Dry run: nothing changed. %d keys would be imported; run again with --apply.\n", rep.ToInsert)
	default:
		fmt.Fprintf(e.stdout, "Imported %d keys into app %s.\n", rep.Imported, c.App)
	}
	return nil
}

func printImport(e *env, file, app string, rep *license.ImportReport) {
	fmt.Fprintf(e.stdout, "%s → app %s: %d rows, %d valid, %d devices to bind\n", file, app, rep.Rows, rep.Valid, rep.Devices)
	statuses := make([]string, 0, len(rep.ByStatus))
	for s := range rep.ByStatus {
		statuses = append(statuses, string(s))
	}
	sort.Strings(statuses)
	for _, s := range statuses {
		fmt.Fprintf(e.stdout, "  %-8s %d\n", s, rep.ByStatus[license.Status(s)])
	}
	for _, er := range rep.Errors {
		where := fmt.Sprintf("line %d", er.Line)
		if er.Field != "" {
			where += " (" + er.Field + ")"
		}
		fmt.Fprintf(e.stderr, "%s: %s\n", where, er.Message)
	}
	if n := rep.ErrorCount - len(rep.Errors); n > 0 {
		fmt.Fprintf(e.stderr, "… and %d more problems\n", n)
	}
}
