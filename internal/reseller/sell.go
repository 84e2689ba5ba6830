package reseller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

var (
	errUnauthorized = apperr.New(apperr.Unauthenticated, wire.CodeUnauthorized, "Missing or invalid reseller token.")
	errDisabled     = apperr.New(apperr.Forbidden, CodeDisabled, "This reseller account is disabled.")
)

// Caller is an authenticated reseller and the app it sells.
type Caller struct {
	Reseller *Reseller
	App      *license.App
}

// Actor is the audit actor of the reseller calling from ip.
func (c *Caller) Actor(ip string) audit.Actor {
	return audit.Actor{Kind: "reseller", ID: c.Reseller.ID, Name: c.Reseller.Name, IP: ip}
}

// Authenticate finds the reseller of a token (looked up by its SHA-256). It
// returns UNAUTHORIZED for an unknown token, RESELLER_DISABLED for a
// disabled reseller and APP_REVOKED while its app is revoked.
func (s *Service) Authenticate(ctx context.Context, token string) (*Caller, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 200 {
		return nil, errUnauthorized
	}
	// Looked up by hash, so the lookup's timing says nothing of the token.
	r, err := s.store.ResellerByTokenHash(ctx, HashToken(token))
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, errUnauthorized
	} else if err != nil {
		return nil, err
	}
	if r.Status != StatusActive {
		return nil, errDisabled
	}
	app, err := s.apps.App(ctx, r.AppID)
	if err != nil {
		return nil, err
	}
	if app.RevokedAt != nil {
		return nil, license.ErrAppRevoked
	}
	return &Caller{Reseller: r, App: app}, nil
}

// Generated is the outcome of Generate.
type Generated struct {
	Keys    []license.Key
	Charged int64
	Balance int64
}

// Generate creates count (1 to MaxBatch) unused keys of one of the
// reseller's products and pays for them, in one transaction: the balance is
// debited by price × count with a conditional update (never below zero,
// however many requests run at once), the keys are inserted as the
// reseller's, with key.created, a ledger row and an audit entry. It returns
// MISSING_FIELDS, NOT_FOUND (no such product), RESELLER_DISABLED or
// CONFLICT INSUFFICIENT_CREDIT with the balance.
func (s *Service) Generate(ctx context.Context, c *Caller, ip, productID string, count int) (*Generated, error) {
	switch {
	case strings.TrimSpace(productID) == "":
		return nil, apperr.Missing("product")
	case count < 1 || count > MaxBatch:
		return nil, apperr.InvalidField("count", fmt.Sprintf("must be 1 to %d", MaxBatch))
	}
	strs := make([]string, count)
	for i := range strs {
		str, err := license.NewKeyString(s.random, c.App.Settings.KeyPrefix)
		if err != nil {
			return nil, err
		}
		strs[i] = str
	}
	actor := c.Actor(ip)
	now := s.Now()
	var out *Generated
	err := s.store.InResellerTx(ctx, func(tx Tx) error {
		// The row as it is now: a disable or a product change made since
		// the token was checked applies.
		r, err := tx.ResellerForUpdate(ctx, c.App.ID, c.Reseller.ID)
		if errors.Is(err, apperr.ErrNotFound) {
			return errUnauthorized
		} else if err != nil {
			return err
		}
		if r.Status != StatusActive {
			return errDisabled
		}
		p := r.Product(productID)
		if p == nil {
			return apperr.NotFoundOf("Product")
		}
		cost := p.Price * int64(count)
		bal, ok, err := tx.Debit(ctx, r.ID, cost, now)
		if err != nil {
			return err
		}
		if !ok {
			return insufficient(r.Balance)
		}
		keys := make([]license.Key, count)
		for i := range keys {
			keys[i] = license.Key{AppID: r.AppID, LicenseKey: strs[i], Status: license.StatusUnused, Type: p.KeyType,
				Duration: p.Duration, MaxDevices: p.MaxDevices, Note: "reseller " + r.Name, CreatedAt: now, UpdatedAt: now}
		}
		if err := tx.InsertResellerKeys(ctx, r.ID, keys); err != nil {
			return err
		}
		if err := tx.AddLedger(ctx, &Entry{ResellerID: r.ID, At: now, Delta: -cost, BalanceAfter: bal, Reason: ReasonGenerate,
			Detail: fmt.Sprintf("%d × %s (%s) at %d", count, p.Name, p.ID, p.Price), Actor: ledgerActor(actor)}); err != nil {
			return err
		}
		if err := tx.AddEvent(ctx, event.Event{AppID: r.AppID, Type: event.KeyCreated, CreatedAt: now, Data: map[string]any{
			"app_id": r.AppID, "count": count, "key_type": p.KeyType, "duration": p.Duration, "license_keys": strs,
			"reseller_id": r.ID}}); err != nil {
			return err
		}
		out = &Generated{Keys: keys, Charged: cost, Balance: bal}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "reseller.generate", r.AppID, fmt.Sprintf("%d keys", count),
			map[string]any{"product": p.ID, "count": count, "price": p.Price, "charged": cost, "balance": bal,
				"key_type": p.KeyType, "duration": p.Duration, "max_devices": p.MaxDevices}))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Keys returns a page of the reseller's own keys and the next cursor (0 at
// the end); status filters on the effective status.
func (s *Service) Keys(ctx context.Context, c *Caller, status license.Status, after int64, limit int) ([]license.Key, int64, error) {
	switch status {
	case "", license.StatusUnused, license.StatusActive, license.StatusPaused, license.StatusBanned, license.StatusExpired,
		license.StatusRedeemed:
	default:
		return nil, 0, apperr.InvalidField("status", "must be unused, active, paused, banned, expired or redeemed")
	}
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	keys, err := s.store.ResellerKeys(ctx, KeyFilter{AppID: c.App.ID, ResellerID: c.Reseller.ID, Status: status, After: after,
		Limit: limit, Now: s.Now()})
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(keys) == limit {
		next = keys[len(keys)-1].ID
	}
	return keys, next, nil
}

// Ban bans one of the reseller's own keys as the owner's ban does (its
// sessions end with BANNED, key.banned is recorded) and audits it. Another
// reseller's key, the owner's and an unknown one are all NOT_FOUND.
func (s *Service) Ban(ctx context.Context, c *Caller, ip, licenseKey, reason string) (*license.Key, error) {
	licenseKey = strings.TrimSpace(licenseKey)
	if licenseKey == "" {
		return nil, apperr.Missing("license_key")
	}
	if len(reason) > 1000 {
		return nil, apperr.InvalidField("reason", "must be at most 1000 characters")
	}
	now := s.Now()
	var out *license.Key
	err := s.store.InResellerTx(ctx, func(tx Tx) error {
		owner, err := tx.KeyReseller(ctx, c.App.ID, licenseKey)
		if errors.Is(err, apperr.ErrNotFound) || (err == nil && owner != c.Reseller.ID) {
			return apperr.NotFoundOf("Key")
		} else if err != nil {
			return err
		}
		lt := tx.License()
		if err := license.BanInTx(ctx, lt, c.App.ID, licenseKey, reason, now); err != nil {
			return err
		}
		if out, err = lt.KeyForUpdate(ctx, c.App.ID, licenseKey); err != nil {
			return err
		}
		details := map[string]any{}
		if reason != "" {
			details["reason"] = reason
		}
		return tx.AddAudit(ctx, audit.NewEntry(c.Actor(ip), now, "reseller.ban", c.App.ID, licenseKey, details))
	})
	return out, err
}

// Ledger returns a page of the reseller's balance history, newest first.
func (s *Service) Ledger(ctx context.Context, c *Caller, before int64, limit int) ([]Entry, int64, error) {
	return s.ledger(ctx, LedgerFilter{AppID: c.App.ID, ResellerID: c.Reseller.ID, Before: before, Limit: limit})
}
