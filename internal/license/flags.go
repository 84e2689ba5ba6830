package license

import (
	"context"
	"encoding/json"
	"regexp"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"

	"github.com/keyward/keyward/wire"
)

// FeatureFlag is a feature an app defines: its name, value type and the
// default every key gets unless the key (or account) overrides it.
type FeatureFlag = wire.FeatureFlag

// Flag types.
const (
	FlagBool   = "bool"
	FlagNumber = "number"
	FlagString = "string"
)

// MaxFlags is the most flags one app may define.
const MaxFlags = 200

var flagNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// checkFlags validates an app's flag definitions and fills absent defaults
// (false, 0 or "").
func checkFlags(flags []FeatureFlag) error {
	if len(flags) > MaxFlags {
		return apperr.InvalidField("feature_flags", "at most 200 flags")
	}
	seen := map[string]bool{}
	for i := range flags {
		f := &flags[i]
		switch {
		case !flagNameRE.MatchString(f.Name):
			return apperr.InvalidField("feature_flags", "flag names are 1 to 64 letters, digits, '_', '.' or '-'")
		case seen[f.Name]:
			return apperr.InvalidField("feature_flags", "flag "+f.Name+" is defined twice")
		case len(f.Description) > 500:
			return apperr.InvalidField("feature_flags", "descriptions are at most 500 characters")
		}
		seen[f.Name] = true
		if len(f.Default) == 0 || string(f.Default) == "null" {
			f.Default = map[string]json.RawMessage{FlagBool: []byte("false"), FlagNumber: []byte("0"), FlagString: []byte(`""`)}[f.Type]
		}
		if len(f.Default) == 0 {
			return apperr.InvalidField("feature_flags", "flag "+f.Name+": type must be bool, number or string")
		}
		if !flagValueOK(f.Type, f.Default) {
			return apperr.InvalidField("feature_flags", "flag "+f.Name+": default must be a "+f.Type)
		}
	}
	return nil
}

func flagValueOK(typ string, raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case bool:
		return typ == FlagBool
	case float64:
		return typ == FlagNumber
	case string:
		return typ == FlagString
	}
	return false
}

// checkFlagTypes refuses a features object that gives a defined flag a
// value of another type. Flags the app does not define pass as they are.
func (a *App) checkFlagTypes(field string, features json.RawMessage) error {
	if len(a.Settings.FeatureFlags) == 0 || len(features) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(features, &m) != nil {
		return nil // checkFeatures reports the shape
	}
	for _, f := range a.Settings.FeatureFlags {
		if v, ok := m[f.Name]; ok && !flagValueOK(f.Type, v) {
			return apperr.InvalidField(field, "flag "+f.Name+" must be a "+f.Type)
		}
	}
	return nil
}

// Features returns the feature map a client sees for a key or account with
// its own features: the app's flag defaults with own on top.
func (a *App) Features(own json.RawMessage) json.RawMessage {
	if len(a.Settings.FeatureFlags) == 0 {
		if len(own) == 0 {
			return json.RawMessage("{}")
		}
		return own
	}
	defaults := make(map[string]json.RawMessage, len(a.Settings.FeatureFlags))
	for _, f := range a.Settings.FeatureFlags {
		defaults[f.Name] = f.Default
	}
	base, _ := json.Marshal(defaults)
	return MergeFeatures(base, own)
}

// SetFlag defines or redefines one feature flag of an app.
func (s *Service) SetFlag(ctx context.Context, actor audit.Actor, appID string, f FeatureFlag) (*App, error) {
	return s.editFlags(ctx, actor, appID, func(flags []FeatureFlag) ([]FeatureFlag, error) {
		for i := range flags {
			if flags[i].Name == f.Name {
				flags[i] = f
				return flags, nil
			}
		}
		return append(flags, f), nil
	})
}

// DeleteFlag removes a flag definition (NOT_FOUND when there is none). Keys
// keep their own values for it.
func (s *Service) DeleteFlag(ctx context.Context, actor audit.Actor, appID, name string) (*App, error) {
	return s.editFlags(ctx, actor, appID, func(flags []FeatureFlag) ([]FeatureFlag, error) {
		for i := range flags {
			if flags[i].Name == name {
				return append(flags[:i], flags[i+1:]...), nil
			}
		}
		return nil, apperr.NotFoundOf("Flag")
	})
}

// editFlags applies change to the app's flag definitions, like an apps.php
// settings edit.
func (s *Service) editFlags(ctx context.Context, actor audit.Actor, appID string,
	change func([]FeatureFlag) ([]FeatureFlag, error)) (*App, error) {
	app, err := s.App(ctx, appID)
	if err != nil {
		return nil, err
	}
	next := *app
	flags, err := change(append([]FeatureFlag(nil), app.Settings.FeatureFlags...))
	if err != nil {
		return nil, err
	}
	next.Settings.FeatureFlags = flags
	return s.UpdateApp(ctx, actor, &next) // validates, audits app.update
}
