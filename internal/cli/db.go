package cli

import (
	"context"
	"time"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/store"
)

func openDB(ctx context.Context, cfg config.Config) (*store.DB, error) {
	return store.Open(ctx, store.Options{DataDir: cfg.Data, URL: cfg.DatabaseURL})
}

// services is what one-shot commands need: a migrated database and the admin
// service, without listeners or background jobs.
type services struct {
	DB     *store.DB
	Admins *admin.Service
}

func openServices(ctx context.Context, cfg config.Config, bcryptCost int) (*services, error) {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	admins, err := admin.New(ctx, db.AdminStore(), time.Now, admin.Config{BcryptCost: bcryptCost})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &services{DB: db, Admins: admins}, nil
}
