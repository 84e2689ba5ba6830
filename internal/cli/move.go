package cli

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/keyward/keyward/internal/store"
)

type moveCmd struct {
	Data string `name:"data" default:"./keyward-data" env:"KEYWARD_DATA" help:"Data directory of the SQLite installation to copy."`
	To   string `name:"to" required:"" help:"postgres:// URL of an empty PostgreSQL database."`
}

func (c *moveCmd) Run(e *env) error {
	if !strings.HasPrefix(c.To, "postgres://") && !strings.HasPrefix(c.To, "postgresql://") {
		return errors.New("--to must be a postgres:// or postgresql:// URL")
	}
	rep, err := store.MoveToPostgres(e.ctx, c.Data, c.To)
	if rep != nil {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TABLE\tSQLITE ROWS\tPOSTGRES ROWS\tSHA-256 (SQLITE)\tSHA-256 (POSTGRES)\t")
		var rows int64
		for _, t := range rep.Tables {
			mark := "ok"
			if !t.OK() {
				mark = "MISMATCH"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.16s\t%.16s\t%s\n", t.Table, t.SourceRows, t.DestRows, t.SourceSum, t.DestSum, mark)
			rows += t.SourceRows
		}
		tw.Flush()
		if err == nil {
			fmt.Fprintf(e.stdout, "moved %d tables, %d rows at schema version %d; counts and checksums match\n", len(rep.Tables), rows, rep.Version)
		}
	}
	return err
}
