package adminapi

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/keyward/keyward/internal/commerce"
	"github.com/keyward/keyward/internal/edge"
	"github.com/keyward/keyward/internal/license"
	"github.com/keyward/keyward/wire"
)

// priceField reads price (a decimal with at most two places) or
// price_cents (an integer) into cents.
func priceField(f edge.Fields, dst *int64) error {
	if raw, ok := f["price"]; ok && string(raw) != "null" {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return edge.BadType("price", "a number")
		}
		x, err := strconv.ParseFloat(n.String(), 64)
		cents := math.Round(x * 100)
		if err != nil || math.Abs(x*100-cents) > 1e-6 || cents < 0 || cents > 1e10 {
			return edge.BadType("price", "a non-negative amount with at most two decimals")
		}
		*dst = int64(cents)
		return nil
	}
	v, ok, err := f.Int("price_cents")
	if ok && err == nil {
		*dst = v
	}
	return err
}

// planFields applies the plan fields present in the body to p.
func planFields(f edge.Fields, p *commerce.Plan) error {
	for name, dst := range map[string]*string{"name": &p.Name, "description": &p.Description, "currency": &p.Currency,
		"interval": &p.Period} {
		if err := setStr(f, name, dst); err != nil {
			return err
		}
	}
	p.Currency = strings.ToUpper(p.Currency)
	if err := priceField(f, &p.PriceCents); err != nil {
		return err
	}
	kt := string(p.KeyType)
	if err := setStr(f, "key_type", &kt); err != nil {
		return err
	}
	p.KeyType = license.KeyType(kt)
	if err := setInt(f, "duration", &p.Duration); err != nil {
		return err
	}
	if err := setInt(f, "max_devices", &p.MaxDevices); err != nil {
		return err
	}
	if _, given := f["max_devices"]; given && p.MaxDevices < 1 { // absent means 1; an explicit 0 is a mistake
		return edge.BadType("max_devices", "1 to 10000")
	}
	if err := setInt(f, "order", &p.Position); err != nil {
		return err
	}
	if err := setBool(f, "active", &p.Active); err != nil {
		return err
	}
	if raw, ok := f["features"]; ok {
		p.Features = json.RawMessage(raw)
	}
	return nil
}

func (a *API) listPlans(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	ps, err := a.commerce.Plans(ctx, appID)
	if err != nil {
		return nil, err
	}
	levels, plans := []wire.AdminPlan{}, []wire.AdminPlan{}
	for i := range ps {
		v := ps[i].AdminWire()
		if ps[i].Kind == commerce.KindLevel {
			levels = append(levels, v)
		} else {
			plans = append(plans, v)
		}
	}
	return &wire.PlanListReply{Success: true, Levels: levels, Plans: plans}, nil
}

func (a *API) createPlan(ctx context.Context, c *adminCall) (any, error) {
	appID, err := a.existingApp(ctx, c)
	if err != nil {
		return nil, err
	}
	p := &commerce.Plan{AppID: appID, Active: true}
	if err := setStr(c.f, "type", &p.Kind); err != nil {
		return nil, err
	}
	if err := planFields(c.f, p); err != nil {
		return nil, err
	}
	if err := a.commerce.CreatePlan(ctx, c.actor, p); err != nil {
		return nil, err
	}
	return &wire.PlanReply{Success: true, Plan: p.AdminWire()}, nil
}

func (a *API) updatePlan(ctx context.Context, c *adminCall) (any, error) {
	appID, id, err := a.appRecord(ctx, c)
	if err != nil {
		return nil, err
	}
	p, err := a.commerce.UpdatePlan(ctx, c.actor, appID, id, func(p *commerce.Plan) error { return planFields(c.f, p) })
	if err != nil {
		return nil, err
	}
	return &wire.PlanReply{Success: true, Plan: p.AdminWire()}, nil
}
