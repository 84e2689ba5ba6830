// Package commerce is what an app sells: subscription levels and one-off
// plans with their prices and the key each purchase delivers. (Orders,
// fulfilment and subscriptions build on it.) It knows nothing of HTTP or
// SQL: it declares the Store it needs and takes its clock from the caller.
package commerce

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/journal"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// Plan kinds.
const (
	KindLevel = "level" // a subscription level, renewed every period
	KindPlan  = "plan"  // a one-off purchase
)

// Periods: levels renew every month or year; plans are bought once.
const (
	PeriodMonth = "month"
	PeriodYear  = "year"
	PeriodOnce  = "once"
)

// Plan is something an app sells: its price and the key a purchase
// delivers (KeyType, Duration in days, MaxDevices, Features).
type Plan struct {
	ID          int64
	AppID       string
	Kind        string
	Name        string
	Description string
	PriceCents  int64
	Currency    string
	Period      string
	KeyType     license.KeyType
	Duration    int
	MaxDevices  int
	Features    json.RawMessage
	Position    int
	Active      bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Store is the persistence commerce needs.
type Store interface {
	// Plans returns the app's plans and levels by position, then ID.
	Plans(ctx context.Context, appID string) ([]Plan, error)
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is a write transaction of commerce.
type Tx interface {
	InsertPlan(ctx context.Context, p *Plan) error
	PlanForUpdate(ctx context.Context, appID string, id int64) (*Plan, error)
	UpdatePlan(ctx context.Context, p *Plan) error
	DeletePlan(ctx context.Context, appID string, id int64) error
	journal.Journal
}

// Service sells.
type Service struct {
	store Store
	now   func() time.Time
}

// New returns a Service over store with the clock now.
func New(store Store, now func() time.Time) *Service { return &Service{store: store, now: now} }

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// CheckPlan validates a plan and fills what its kind implies: a level's
// key is a days key running one period (30 or 365 days unless given); a
// plan is bought once.
func CheckPlan(p *Plan) error {
	switch p.Kind {
	case KindLevel:
		if p.Period != PeriodMonth && p.Period != PeriodYear {
			return apperr.InvalidField("interval", "must be month or year for a subscription level")
		}
		if p.KeyType == "" {
			p.KeyType = license.TypeDays
		}
		if p.KeyType != license.TypeDays {
			return apperr.InvalidField("key_type", "must be days for a subscription level")
		}
		if p.Duration == 0 {
			p.Duration = map[string]int{PeriodMonth: 30, PeriodYear: 365}[p.Period]
		}
	case KindPlan:
		if p.Period == "" {
			p.Period = PeriodOnce
		}
		if p.Period != PeriodOnce {
			return apperr.InvalidField("interval", "must be once for a plan")
		}
	default:
		return apperr.InvalidField("type", "must be level or plan")
	}
	if p.MaxDevices == 0 {
		p.MaxDevices = 1
	}
	f, err := license.CheckFeatures(p.Features)
	if err != nil {
		return err
	}
	p.Features = f
	switch {
	case strings.TrimSpace(p.Name) == "" || utf8.RuneCountInString(p.Name) > 200:
		return apperr.InvalidField("name", "must be 1 to 200 characters")
	case len(p.Description) > 5000:
		return apperr.InvalidField("description", "must be at most 5000 bytes")
	case p.PriceCents < 0 || p.PriceCents > 100_000_000_00:
		return apperr.InvalidField("price", "must be 0 to 100000000")
	case !currencyRE.MatchString(p.Currency):
		return apperr.InvalidField("currency", "must be a three-letter ISO 4217 code such as USD")
	case p.KeyType != license.TypeDays && p.KeyType != license.TypeLifetime:
		return apperr.InvalidField("key_type", "must be days or lifetime")
	case p.KeyType == license.TypeDays && (p.Duration < 1 || p.Duration > 36500):
		return apperr.InvalidField("duration", "must be 1 to 36500 days for days keys")
	case p.KeyType == license.TypeLifetime && p.Duration != 0:
		return apperr.InvalidField("duration", "is not allowed for lifetime keys")
	case p.MaxDevices < 1 || p.MaxDevices > 10000:
		return apperr.InvalidField("max_devices", "must be 1 to 10000")
	case p.Position < -1_000_000 || p.Position > 1_000_000:
		return apperr.InvalidField("order", "must be -1000000 to 1000000")
	}
	return nil
}

// Pricing returns the app's active plans of kind ("" for both), in order.
func (s *Service) Pricing(ctx context.Context, appID, kind string) ([]Plan, error) {
	all, err := s.store.Plans(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := []Plan{}
	for _, p := range all {
		if p.Active && (kind == "" || p.Kind == kind) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Plans returns every plan and level of the app, inactive ones too.
func (s *Service) Plans(ctx context.Context, appID string) ([]Plan, error) {
	return s.store.Plans(ctx, appID)
}

// CreatePlan validates and stores a plan or level.
func (s *Service) CreatePlan(ctx context.Context, actor audit.Actor, p *Plan) error {
	if err := CheckPlan(p); err != nil {
		return err
	}
	now := s.now().UTC()
	p.CreatedAt, p.UpdatedAt = now, now
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.InsertPlan(ctx, p); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.Entry{At: now, Actor: actor, Action: "pricing.create", AppID: p.AppID, Target: p.Name,
			Details: map[string]any{"id": p.ID, "kind": p.Kind, "price_cents": p.PriceCents, "currency": p.Currency}})
	})
}

// UpdatePlan applies change to a stored plan (its kind stays) and
// validates the result; an error from change aborts the edit.
func (s *Service) UpdatePlan(ctx context.Context, actor audit.Actor, appID string, id int64, change func(*Plan) error) (*Plan, error) {
	now := s.now().UTC()
	var out *Plan
	err := s.store.InTx(ctx, func(tx Tx) error {
		p, err := tx.PlanForUpdate(ctx, appID, id)
		if errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("Plan")
		} else if err != nil {
			return err
		}
		kind := p.Kind
		if err := change(p); err != nil {
			return err
		}
		p.ID, p.AppID, p.Kind, p.UpdatedAt = id, appID, kind, now
		if err := CheckPlan(p); err != nil {
			return err
		}
		if err := tx.UpdatePlan(ctx, p); err != nil {
			return err
		}
		out = p
		return tx.AddAudit(ctx, audit.Entry{At: now, Actor: actor, Action: "pricing.update", AppID: appID, Target: p.Name,
			Details: map[string]any{"id": id, "price_cents": p.PriceCents, "currency": p.Currency, "active": p.Active}})
	})
	return out, err
}

// DeletePlan removes a plan or level.
func (s *Service) DeletePlan(ctx context.Context, actor audit.Actor, appID string, id int64) error {
	now := s.now().UTC()
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.DeletePlan(ctx, appID, id); errors.Is(err, apperr.ErrNotFound) {
			return apperr.NotFoundOf("Plan")
		} else if err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.Entry{At: now, Actor: actor, Action: "pricing.delete", AppID: appID, Details: map[string]any{"id": id}})
	})
}

// Wire is the plan as the public price list shows it.
func (p *Plan) Wire() wire.Plan {
	return wire.Plan{ID: p.ID, Type: p.Kind, Name: p.Name, Description: p.Description,
		Price: float64(p.PriceCents) / 100, PriceCents: p.PriceCents, Currency: p.Currency, Interval: p.Period,
		KeyType: string(p.KeyType), Duration: p.Duration, MaxDevices: p.MaxDevices, Features: p.Features}
}

// AdminWire is the plan as the admin API shows it.
func (p *Plan) AdminWire() wire.AdminPlan {
	return wire.AdminPlan{Plan: p.Wire(), Active: p.Active, Order: p.Position}
}
