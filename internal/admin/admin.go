// Package admin manages the owners who use the admin API: their accounts,
// bcrypt-hashed passwords and the JWTs they sign in with.
package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/lockout"
)

// User is an admin account.
type User struct {
	ID           string
	Username     string
	PasswordHash string
	CreatedAt    time.Time
}

// Store is the persistence admin needs.
type Store interface {
	AdminByUsername(ctx context.Context, username string) (*User, error)
	AdminByID(ctx context.Context, id string) (*User, error)
	CountAdmins(ctx context.Context) (int, error)
	// InsertAdmin stores u and its audit entry in one transaction.
	InsertAdmin(ctx context.Context, u *User, e audit.Entry) error
	// ServerSecret returns the installation-wide secret called name, storing
	// generate's value first when there is none (first writer wins across
	// processes).
	ServerSecret(ctx context.Context, name string, generate func() (string, error)) (string, error)
}

// Config holds the admin service's tunables.
type Config struct {
	BcryptCost int           // default bcrypt.DefaultCost+2 (12)
	TokenTTL   time.Duration // JWT lifetime; default 12 h
	// Guard counts failed sign-ins (nil: no lockouts); SignIn applies per
	// username, SignInIP per client IP.
	Guard    *lockout.Guard
	SignIn   lockout.Policy
	SignInIP lockout.Policy
}

// Service signs admins in and verifies their tokens.
type Service struct {
	store Store
	now   func() time.Time
	cfg   Config
	key   []byte
	dummy []byte // a bcrypt hash compared against when the username is unknown
}

// Claims are what a verified admin token says.
type Claims struct {
	UserID   string
	Username string
}

// Password policy: bcrypt reads at most 72 bytes, so longer passwords are
// refused rather than silently truncated.
const (
	MinPassword = 8
	MaxPassword = 72
)

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9_.@-]{3,64}$`)

// ErrInvalidCredentials is the one answer to every failed sign-in.
var ErrInvalidCredentials = apperr.New(apperr.Unauthenticated, "INVALID_CREDENTIALS", "Invalid username or password.")

var errUnauthorized = apperr.New(apperr.Unauthenticated, "UNAUTHORIZED", "Missing or invalid bearer token.")

// New returns a Service whose JWT key is the installation's (created on first use).
func New(ctx context.Context, store Store, now func() time.Time, cfg Config) (*Service, error) {
	if cfg.BcryptCost == 0 {
		cfg.BcryptCost = 12
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = 12 * time.Hour
	}
	key, err := store.ServerSecret(ctx, "jwt_key", func() (string, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return hex.EncodeToString(b), err
	})
	if err != nil {
		return nil, err
	}
	raw, err := hex.DecodeString(key)
	if err != nil {
		return nil, errors.New("stored jwt_key is not hex")
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("dummy-password-for-timing"), cfg.BcryptCost)
	if err != nil {
		return nil, err
	}
	return &Service{store: store, now: now, cfg: cfg, key: raw, dummy: dummy}, nil
}

// ValidatePassword applies the password policy.
func ValidatePassword(p string) error {
	if len(p) < MinPassword || len(p) > MaxPassword {
		return apperr.New(apperr.Invalid, "MISSING_FIELDS", "Invalid field password: must be 8 to 72 bytes.")
	}
	return nil
}

// CreateUser adds an admin. It returns MISSING_FIELDS or CONFLICT.
func (s *Service) CreateUser(ctx context.Context, actor audit.Actor, username, password string) (*User, error) {
	if !usernameRE.MatchString(username) {
		return nil, apperr.New(apperr.Invalid, "MISSING_FIELDS", "Invalid field username: 3 to 64 letters, digits or _ . @ -.")
	}
	if err := ValidatePassword(password); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.cfg.BcryptCost)
	if err != nil {
		return nil, apperr.Wrap(err, "hash password")
	}
	now := s.now().UTC()
	u := &User{ID: uuid.NewString(), Username: username, PasswordHash: string(hash), CreatedAt: now}
	err = s.store.InsertAdmin(ctx, u, audit.Entry{At: now, Actor: actor, Action: "admin.create", Target: username})
	if errors.Is(err, apperr.ErrConflict) {
		return nil, apperr.New(apperr.Conflict, "CONFLICT", "An admin with that username already exists.")
	}
	return u, err
}

// HasUsers reports whether any admin exists.
func (s *Service) HasUsers(ctx context.Context) (bool, error) {
	n, err := s.store.CountAdmins(ctx)
	return n > 0, err
}

// Login checks a username and password, from the client address ip, and
// returns a signed token. An unknown username costs the same bcrypt
// comparison as a wrong password. Repeated failures per username or per IP
// lock sign-in (TOO_MANY_ATTEMPTS) without comparing the password.
func (s *Service) Login(ctx context.Context, username, password, ip string) (string, error) {
	name := strings.ToLower(username)
	if len(name) > 64 {
		name = name[:64]
	}
	subs := []lockout.Subject{{Scope: "admin", ID: name, Policy: s.cfg.SignIn}, {Scope: "admin-ip", ID: ip, Policy: s.cfg.SignInIP}}
	if err := s.cfg.Guard.Check(ctx, subs...); err != nil {
		return "", err
	}
	u, err := s.store.AdminByUsername(ctx, username)
	if err != nil && !errors.Is(err, apperr.ErrNotFound) {
		return "", err
	}
	hash := s.dummy
	if u != nil {
		hash = []byte(u.PasswordHash)
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || u == nil {
		if err := s.cfg.Guard.Fail(ctx, subs...); err != nil {
			return "", err
		}
		return "", ErrInvalidCredentials
	}
	if err := s.cfg.Guard.Clear(ctx, subs[0]); err != nil {
		return "", err
	}
	now := s.now()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "keyward", "sub": u.ID, "name": u.Username,
		"iat": now.Unix(), "exp": now.Add(s.cfg.TokenTTL).Unix(),
	})
	return tok.SignedString(s.key)
}

func (s *Service) parse(token string) (*jwt.Token, error) {
	return jwt.Parse(token, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer("keyward"), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.now))
}

// Signed reports whether token is a current token signed by this
// installation, without reading the database: the request limiter uses it
// to give signed-in admins their higher ceiling.
func (s *Service) Signed(token string) bool {
	_, err := s.parse(token)
	return err == nil
}

// Verify checks a token's signature, issuer and expiry against the service
// clock, and that its admin still exists.
func (s *Service) Verify(ctx context.Context, token string) (*Claims, error) {
	parsed, err := s.parse(token)
	if err != nil {
		return nil, errUnauthorized
	}
	mc, _ := parsed.Claims.(jwt.MapClaims)
	sub, _ := mc["sub"].(string)
	u, err := s.store.AdminByID(ctx, sub)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, errUnauthorized
	} else if err != nil {
		return nil, err
	}
	return &Claims{UserID: u.ID, Username: u.Username}, nil
}
