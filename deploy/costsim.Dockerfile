# syntax=docker/dockerfile:1
#
# The image of the simulator (cmd/costsim), the upstream of compose.yaml.
# Build it from the repository root:
#
#   docker build -f deploy/costsim.Dockerfile -t costsim .
#
# Like the gateway's Dockerfile, each RUN is a command of the Makefile
# (`make build-sim`, which `make deploy-check` and so CI run), and
# TestDockerfileRunsTheMakefile keeps the two equal.

# 1. Go builds a static binary.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o costsim ./cmd/costsim

# 2. A minimal runtime: no shell, no package manager, not root.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/costsim /costsim
USER nonroot
EXPOSE 8090
# The simulator's default is loopback only, which no other container reaches.
ENV COSTSIM_LISTEN=:8090
ENTRYPOINT ["/costsim"]
