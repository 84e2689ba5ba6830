package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/keyward/keyward/internal/config"
)

// configCmd shows the configuration serve would run with.
type configCmd struct {
	Print configPrintCmd `cmd:"" help:"Print every effective setting (flags, environment, --config file, defaults) with secrets masked, then validate them."`
}

type configPrintCmd struct {
	config.Config `embed:""`
}

func (c *configPrintCmd) Run(e *env) error {
	for _, s := range c.Settings() {
		fmt.Fprintf(e.stdout, "%-28s %-34s %s\n", s.Flag, s.Env, s.Value)
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
	}
	return nil
}

// jsonConfig loads a --config file: a JSON object of settings named as
// their flags (with - or _). Unlike kong.JSON it refuses names no flag of
// the command line has, so a misspelt setting is not silently ignored.
func jsonConfig(r io.Reader) (kong.Resolver, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	keys := map[string]any{}
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, fmt.Errorf("--config: not a JSON object of settings: %w", err)
	}
	norm := make(map[string]any, len(keys)) // kong.JSON looks up session_timeout only
	for k, v := range keys {
		n := strings.ReplaceAll(k, "-", "_")
		if _, dup := norm[n]; dup {
			return nil, fmt.Errorf("--config: setting %s is given twice", n)
		}
		norm[n] = v
	}
	raw, _ = json.Marshal(norm)
	base, err := kong.JSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return strictConfig{Resolver: base, keys: keys}, nil
}

type strictConfig struct {
	kong.Resolver
	keys map[string]any
}

// Resolve gives the file's value of flag unless one of its environment
// variables is set: flags override environment variables, which override
// the file.
func (s strictConfig) Resolve(ctx *kong.Context, parent *kong.Path, flag *kong.Flag) (any, error) {
	for _, env := range flag.Tag.Envs {
		if _, ok := os.LookupEnv(env); ok {
			return nil, nil
		}
	}
	return s.Resolver.Resolve(ctx, parent, flag)
}

func (s strictConfig) Validate(app *kong.Application) error {
	known := map[string]bool{}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			known[strings.ReplaceAll(f.Name, "-", "_")] = true
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(app.Node)
	var unknown []string
	for k := range s.keys {
		if !known[strings.ReplaceAll(k, "-", "_")] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("--config: unknown settings %s (use flag names such as session-timeout or session_timeout)", strings.Join(unknown, ", "))
	}
	return nil
}
