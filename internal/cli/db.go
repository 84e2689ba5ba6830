package cli

import (
	"context"

	"github.com/keyward/keyward/internal/admin"
	"github.com/keyward/keyward/internal/config"
	"github.com/keyward/keyward/internal/lockout"
	"github.com/keyward/keyward/internal/seal"
	"github.com/keyward/keyward/internal/store"
)

// openDB opens the database with the secret key file (generated when
// absent, as serve does), for commands that read or write secrets.
func openDB(ctx context.Context, cfg config.Config) (*store.DB, error) {
	if cfg.Data != "" && (cfg.DatabaseURL == "" || cfg.SecretKeyFile == "") { // as server.New
		if err := store.PrepareDataDir(cfg.Data); err != nil {
			return nil, err
		}
	}
	keys, _, err := seal.LoadOrCreate(cfg.SecretKeyPath())
	if err != nil {
		return nil, err
	}
	return store.Open(ctx, store.Options{DataDir: cfg.Data, URL: cfg.DatabaseURL, Synchronous: cfg.SQLiteSynchronous, Keys: keys})
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
	if _, err := db.SealSecrets(ctx); err != nil {
		db.Close()
		return nil, err
	}
	// The guard is only cleared here (a password reset ends the username's
	// lockout); one-shot commands count no sign-ins.
	now := clockOf(ctx)
	admins, err := admin.New(ctx, db.AdminStore(), now, admin.Config{BcryptCost: bcryptCost,
		Guard: lockout.New(db.LockoutStore(), now)})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &services{DB: db, Admins: admins}, nil
}
