package reseller

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// TokenPrefix starts every reseller token.
const TokenPrefix = "kwr_"

// Error codes of this package.
const (
	CodeInsufficientCredit = wire.CodeInsufficientCredit
	CodeDisabled           = wire.CodeResellerDisabled
	CodeBalanceLimit       = wire.CodeBalanceLimit
)

// Service is the reseller desk: owner operations and reseller operations.
type Service struct {
	store  Store
	apps   Apps
	now    func() time.Time
	random io.Reader
}

// New returns the service.
func New(store Store, apps Apps, now func() time.Time, random io.Reader) *Service {
	return &Service{store: store, apps: apps, now: now, random: random}
}

// Now is the service clock in UTC.
func (s *Service) Now() time.Time { return s.now().UTC() }

// HashToken is the stored form of a token: its SHA-256 in hex.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// newToken returns kwr_ and 43 base64url characters (256 random bits) and its hint.
func (s *Service) newToken() (string, string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(s.random, b); err != nil {
		return "", "", apperr.Wrap(err, "random")
	}
	tok := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return tok, tok[:len(TokenPrefix)+5], nil
}

var productIDRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// CheckProducts validates a product list (MISSING_FIELDS on the first
// mistake) and fills in defaults (one device).
func CheckProducts(ps []Product) ([]Product, error) {
	if ps == nil {
		ps = []Product{}
	}
	if len(ps) > MaxProducts {
		return nil, apperr.InvalidField("products", fmt.Sprintf("at most %d products", MaxProducts))
	}
	seen := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		p.ID, p.Name = strings.TrimSpace(p.ID), strings.TrimSpace(p.Name)
		if p.MaxDevices == 0 {
			p.MaxDevices = 1
		}
		switch {
		case !productIDRE.MatchString(p.ID):
			return nil, apperr.InvalidField("products", "each id must be 1 to 64 letters, digits, '_', '.' or '-'")
		case seen[p.ID]:
			return nil, apperr.InvalidField("products", "product id "+p.ID+" appears twice")
		case p.Name == "" || len(p.Name) > 200:
			return nil, apperr.InvalidField("products", "each name must be 1 to 200 characters")
		case p.KeyType != license.TypeDays && p.KeyType != license.TypeLifetime:
			return nil, apperr.InvalidField("products", "key_type must be days or lifetime")
		case p.KeyType == license.TypeDays && (p.Duration < 1 || p.Duration > 36500):
			return nil, apperr.InvalidField("products", "duration_value is required for days keys and must be 1 to 36500")
		case p.KeyType == license.TypeLifetime && p.Duration != 0:
			return nil, apperr.InvalidField("products", "duration_value is not allowed for lifetime keys")
		case p.MaxDevices < 1 || p.MaxDevices > 10000:
			return nil, apperr.InvalidField("products", "max_devices must be 1 to 10000")
		case p.Price < 0 || p.Price > MaxPrice:
			return nil, apperr.InvalidField("products", fmt.Sprintf("price must be 0 to %d credits", MaxPrice))
		}
		seen[p.ID] = true
	}
	return ps, nil
}

func checkProfile(name, email string) error {
	switch {
	case name == "" || len(name) > 200:
		return apperr.InvalidField("name", "must be 1 to 200 characters")
	case email != "" && license.CheckEmail(email) != nil:
		return apperr.InvalidField("email", "must be an e-mail address")
	}
	return nil
}

// CreateInput is a new reseller.
type CreateInput struct {
	AppID    string
	Name     string
	Email    string
	Products []Product
}

// Create makes an active reseller with a zero balance and returns it with
// its token, shown this once (only its SHA-256 is kept). It returns
// MISSING_FIELDS or NOT_FOUND (no such app).
func (s *Service) Create(ctx context.Context, actor audit.Actor, in CreateInput) (*Reseller, string, error) {
	in.Name, in.Email = strings.TrimSpace(in.Name), strings.TrimSpace(in.Email)
	if err := checkProfile(in.Name, in.Email); err != nil {
		return nil, "", err
	}
	ps, err := CheckProducts(in.Products)
	if err != nil {
		return nil, "", err
	}
	if _, err := s.apps.App(ctx, in.AppID); err != nil {
		return nil, "", err
	}
	tok, hint, err := s.newToken()
	if err != nil {
		return nil, "", err
	}
	id, err := uuid.NewRandomFromReader(s.random)
	if err != nil {
		return nil, "", apperr.Wrap(err, "random")
	}
	now := s.Now()
	r := &Reseller{ID: id.String(), AppID: in.AppID, Name: in.Name, Email: in.Email, TokenHint: hint, Products: ps,
		Status: StatusActive, CreatedAt: now, UpdatedAt: now}
	err = s.store.InResellerTx(ctx, func(tx Tx) error {
		if err := tx.InsertReseller(ctx, r, HashToken(tok)); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "reseller.create", r.AppID, r.ID,
			map[string]any{"name": r.Name, "email": r.Email, "products": r.Products}))
	})
	if err != nil {
		return nil, "", err
	}
	return r, tok, nil
}

// List returns an app's resellers with their balances.
func (s *Service) List(ctx context.Context, appID string) ([]Reseller, error) {
	return s.store.Resellers(ctx, appID)
}

// Get returns one of the app's resellers or NOT_FOUND.
func (s *Service) Get(ctx context.Context, appID, id string) (*Reseller, error) {
	r, err := s.store.Reseller(ctx, appID, id)
	return r, apperr.NotFoundAs(err, "Reseller")
}

// Activity returns a page of ledger entries, newest first, of one reseller
// of the app (NOT_FOUND if it is not the app's) or, with id "", of all of
// them; next is the cursor of the following page (0 at the end).
func (s *Service) Activity(ctx context.Context, appID, id string, before int64, limit int) ([]Entry, int64, error) {
	if id != "" {
		if _, err := s.Get(ctx, appID, id); err != nil {
			return nil, 0, err
		}
	}
	return s.ledger(ctx, LedgerFilter{AppID: appID, ResellerID: id, Before: before, Limit: limit})
}

func (s *Service) ledger(ctx context.Context, f LedgerFilter) ([]Entry, int64, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	es, err := s.store.Ledger(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(es) == f.Limit {
		next = es[len(es)-1].ID
	}
	return es, next, nil
}

// ledgerActor is how the ledger names who changed a balance.
func ledgerActor(a audit.Actor) string { return a.Kind + ":" + a.Name }

// TopUp adds amount (1 to MaxAmount) credits. It returns MISSING_FIELDS,
// NOT_FOUND or, past MaxBalance, CONFLICT BALANCE_LIMIT.
func (s *Service) TopUp(ctx context.Context, actor audit.Actor, appID, id string, amount int64, note string) (*Reseller, error) {
	if amount < 1 || amount > MaxAmount {
		return nil, apperr.InvalidField("amount", fmt.Sprintf("must be 1 to %d", int64(MaxAmount)))
	}
	if len(note) > 1000 {
		return nil, apperr.InvalidField("reason", "must be at most 1000 characters")
	}
	return s.change(ctx, actor, appID, id, amount, ReasonTopUp, note)
}

// Adjust corrects a balance by amount (non-zero, either sign) for reason
// (required). A balance never goes below zero: an adjustment that would is
// CONFLICT INSUFFICIENT_CREDIT with the balance.
func (s *Service) Adjust(ctx context.Context, actor audit.Actor, appID, id string, amount int64, reason string) (*Reseller, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case amount == 0 || amount > MaxAmount || amount < -MaxAmount:
		return nil, apperr.InvalidField("amount", fmt.Sprintf("must be non-zero and between -%d and %d", int64(MaxAmount), int64(MaxAmount)))
	case reason == "":
		return nil, apperr.Missing("reason")
	case len(reason) > 1000:
		return nil, apperr.InvalidField("reason", "must be at most 1000 characters")
	}
	return s.change(ctx, actor, appID, id, amount, ReasonAdjust, reason)
}

func insufficient(balance int64) error {
	return apperr.New(apperr.Conflict, CodeInsufficientCredit, "The balance does not cover this.").With("balance", balance)
}

// change moves a balance by delta with its ledger row and audit entry.
func (s *Service) change(ctx context.Context, actor audit.Actor, appID, id string, delta int64, reason, detail string) (*Reseller, error) {
	now := s.Now()
	var out *Reseller
	err := s.store.InResellerTx(ctx, func(tx Tx) error {
		r, err := tx.ResellerForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Reseller")
		}
		var bal int64
		var ok bool
		if delta > 0 {
			bal, ok, err = tx.Credit(ctx, r.ID, delta, MaxBalance, now)
			if err == nil && !ok {
				return apperr.New(apperr.Conflict, CodeBalanceLimit, "The balance would pass its limit.").With("balance", r.Balance)
			}
		} else {
			bal, ok, err = tx.Debit(ctx, r.ID, -delta, now)
			if err == nil && !ok {
				return insufficient(r.Balance)
			}
		}
		if err != nil {
			return err
		}
		r.Balance, r.UpdatedAt = bal, now
		out = r
		if err := tx.AddLedger(ctx, &Entry{ResellerID: r.ID, At: now, Delta: delta, BalanceAfter: bal, Reason: reason,
			Detail: detail, Actor: ledgerActor(actor)}); err != nil {
			return err
		}
		details := map[string]any{"amount": delta, "balance": bal}
		if detail != "" {
			details["reason"] = detail
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "reseller."+reason, appID, r.ID, details))
	})
	return out, err
}

// Update is a change of a reseller's profile or products; nil fields stay.
type Update struct {
	Name     *string
	Email    *string
	Products *[]Product
}

// Update changes a reseller's name, e-mail or products (MISSING_FIELDS,
// NOT_FOUND).
func (s *Service) Update(ctx context.Context, actor audit.Actor, appID, id string, u Update) (*Reseller, error) {
	details := map[string]any{}
	return s.mutate(ctx, actor, appID, id, "reseller.update", details, func(r *Reseller) error {
		if u.Name != nil {
			r.Name = strings.TrimSpace(*u.Name)
			details["name"] = r.Name
		}
		if u.Email != nil {
			r.Email = strings.TrimSpace(*u.Email)
			details["email"] = r.Email
		}
		if err := checkProfile(r.Name, r.Email); err != nil {
			return err
		}
		if u.Products != nil {
			ps, err := CheckProducts(*u.Products)
			if err != nil {
				return err
			}
			r.Products = ps
			details["products"] = ps
		}
		return nil
	})
}

// SetProducts replaces what a reseller may sell.
func (s *Service) SetProducts(ctx context.Context, actor audit.Actor, appID, id string, ps []Product) (*Reseller, error) {
	return s.Update(ctx, actor, appID, id, Update{Products: &ps})
}

// SetEnabled enables or disables a reseller; a disabled one is refused
// with RESELLER_DISABLED until enabled again.
func (s *Service) SetEnabled(ctx context.Context, actor audit.Actor, appID, id string, enabled bool) (*Reseller, error) {
	action, status := "reseller.disable", StatusDisabled
	if enabled {
		action, status = "reseller.enable", StatusActive
	}
	return s.mutate(ctx, actor, appID, id, action, nil, func(r *Reseller) error {
		r.Status = status
		return nil
	})
}

// mutate loads a reseller for update, applies fn, saves it and audits action.
func (s *Service) mutate(ctx context.Context, actor audit.Actor, appID, id, action string, details map[string]any,
	fn func(*Reseller) error) (*Reseller, error) {
	now := s.Now()
	var out *Reseller
	err := s.store.InResellerTx(ctx, func(tx Tx) error {
		r, err := tx.ResellerForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Reseller")
		}
		if err := fn(r); err != nil {
			return err
		}
		r.UpdatedAt = now
		if err := tx.UpdateReseller(ctx, r); err != nil {
			return err
		}
		out = r
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, action, appID, r.ID, details))
	})
	return out, err
}

// RotateToken gives a reseller a new token, returned once; the old one
// stops working at once.
func (s *Service) RotateToken(ctx context.Context, actor audit.Actor, appID, id string) (*Reseller, string, error) {
	tok, hint, err := s.newToken()
	if err != nil {
		return nil, "", err
	}
	now := s.Now()
	var out *Reseller
	err = s.store.InResellerTx(ctx, func(tx Tx) error {
		r, err := tx.ResellerForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Reseller")
		}
		if err := tx.SetResellerToken(ctx, r.ID, HashToken(tok), hint, now); err != nil {
			return err
		}
		r.TokenHint, r.UpdatedAt = hint, now
		out = r
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "reseller.rotate_token", appID, r.ID, nil))
	})
	if err != nil {
		return nil, "", err
	}
	return out, tok, nil
}

// Delete removes a reseller with its token and ledger. The keys it sold
// stay (they become the owner's); the audit log keeps its history.
func (s *Service) Delete(ctx context.Context, actor audit.Actor, appID, id string) error {
	now := s.Now()
	return s.store.InResellerTx(ctx, func(tx Tx) error {
		r, err := tx.ResellerForUpdate(ctx, appID, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Reseller")
		}
		if err := tx.DeleteReseller(ctx, r.ID); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "reseller.delete", appID, r.ID,
			map[string]any{"name": r.Name, "balance": r.Balance}))
	})
}
