package reseller

import (
	"testing"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/license"
)

func TestCheckProducts(t *testing.T) {
	ok := Product{ID: "m", Name: "Month", KeyType: license.TypeDays, Duration: 30, Price: 4}
	life := Product{ID: "life.1", Name: "Lifetime", KeyType: license.TypeLifetime, MaxDevices: 3, Price: 0}
	got, err := CheckProducts([]Product{ok, life})
	if err != nil || len(got) != 2 || got[0].MaxDevices != 1 || got[1].MaxDevices != 3 {
		t.Fatalf("CheckProducts(valid) = %+v, %v", got, err)
	}
	if got, err := CheckProducts(nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("CheckProducts(nil) = %#v, %v; want an empty list", got, err)
	}
	with := func(f func(p *Product)) []Product { p := ok; f(&p); return []Product{p} }
	for name, ps := range map[string][]Product{
		"empty id":          with(func(p *Product) { p.ID = "" }),
		"bad id":            with(func(p *Product) { p.ID = "a b" }),
		"long id":           with(func(p *Product) { p.ID = string(make([]byte, 65)) }),
		"no name":           with(func(p *Product) { p.Name = " " }),
		"bad type":          with(func(p *Product) { p.KeyType = "weeks" }),
		"days without term": with(func(p *Product) { p.Duration = 0 }),
		"lifetime with term": with(func(p *Product) {
			p.KeyType = license.TypeLifetime
		}),
		"too many devices": with(func(p *Product) { p.MaxDevices = 10001 }),
		"negative devices": with(func(p *Product) { p.MaxDevices = -1 }),
		"negative price":   with(func(p *Product) { p.Price = -1 }),
		"huge price":       with(func(p *Product) { p.Price = MaxPrice + 1 }),
		"duplicate id":     {ok, ok},
		"too many":         make([]Product, MaxProducts+1),
	} {
		if _, err := CheckProducts(ps); apperr.CodeOf(err) != "MISSING_FIELDS" {
			t.Errorf("%s: got %v, want MISSING_FIELDS", name, err)
		}
	}
}

func TestResellerProduct(t *testing.T) {
	r := &Reseller{Products: []Product{{ID: "a", Price: 1}, {ID: "b", Price: 2}}}
	if p := r.Product("b"); p == nil || p.Price != 2 {
		t.Errorf("Product(b) = %+v", p)
	}
	if p := r.Product("c"); p != nil {
		t.Errorf("Product(c) = %+v, want nil", p)
	}
}
