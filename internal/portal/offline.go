package portal

import (
	"context"

	"github.com/keyward/keyward/internal/customer"
	"github.com/keyward/keyward/internal/license"
)

// customerOfflineActivate: POST /api/customer/offline-activate.php
// {request} → {license_file, …} (docs/offline.md). The customer turns an
// air-gapped machine's activation request into a license file; the request
// must be for the token's app and name the token's key (or, for an account,
// one of the keys redeemed onto it). The device is bound and counted as an
// online login's would be.
func (a *API) customerOfflineActivate(ctx context.Context, c *customerCall) (any, error) {
	text, err := c.f.Str("request")
	if err != nil {
		return nil, err
	}
	in := license.OfflineRequest{AppID: c.p.App.ID, Text: text, Source: license.FileOffline,
		Actor: c.p.Actor(c.ip)}
	if c.p.Kind == customer.KindKey {
		in.LicenseKeys = []string{c.p.Key.LicenseKey}
	} else {
		v, err := a.customer.View(ctx, c.p)
		if err != nil {
			return nil, err
		}
		if len(v.Keys) == 0 {
			v.Keys = []string{"\x00"} // an account with no key may activate none
		}
		in.LicenseKeys = v.Keys
	}
	f, err := a.lic.OfflineActivate(ctx, in, a.FileSigner())
	if err != nil {
		return nil, err
	}
	return f.Reply(), nil
}
