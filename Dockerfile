# syntax=docker/dockerfile:1
#
# The image of the gateway, in three stages. Each RUN is a command of the
# Makefile (`make build`), which CI runs; TestDockerfileRunsTheMakefile keeps
# the two equal.

# 1. Node builds the playground.
FROM node:24 AS playground
WORKDIR /src/web/playground
COPY web/playground/package.json web/playground/package-lock.json ./
RUN npm ci
COPY web/playground/ ./
RUN npm run build

# 2. Go builds a static binary, with the playground embedded.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=playground /src/web/playground/dist/ web/playground/dist/
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o costgw .

# 3. A minimal runtime: no shell, no package manager, not root.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/costgw /costgw
USER nonroot
EXPOSE 8080
ENV COSTGW_LISTEN=:8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 CMD ["/costgw", "-healthcheck"]
ENTRYPOINT ["/costgw"]
