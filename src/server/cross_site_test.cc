#include "server/cross_site.h"

#include <gtest/gtest.h>

namespace cairn::server {
namespace {

TEST(CrossSiteTest, HostNameStripsPortAndBrackets) {
  EXPECT_EQ(HostName("Example.COM:5000"), "example.com");
  EXPECT_EQ(HostName("[::1]:5000"), "::1");
  EXPECT_EQ(HostName("::1"), "::1");
  EXPECT_EQ(HostName("127.0.0.1"), "127.0.0.1");
}

TEST(CrossSiteTest, HostsOfTheServerAreAllowedOthersRefused) {
  CrossSitePolicy p{"127.0.0.1", {}, {}};
  for (std::string_view h : {"127.0.0.1:5000", "localhost:5000", "LOCALHOST", "[::1]:80",
                             "10.1.2.3:5000", "app.localhost", ""}) {
    EXPECT_TRUE(HostAllowed(h, p)) << h;
  }
  for (std::string_view h : {"attacker.example", "attacker.example:5000", "localhost.evil.com",
                             "127.0.0.1.nip.io", ":5000"}) {
    EXPECT_FALSE(HostAllowed(h, p)) << h;
  }
}

TEST(CrossSiteTest, AllowedHostsAddNamesAndDomains) {
  CrossSitePolicy p{"0.0.0.0", {"tracker.lab", "*.corp.example"}, {}};
  EXPECT_TRUE(HostAllowed("tracker.lab:5000", p));
  EXPECT_TRUE(HostAllowed("gpu1.corp.example", p));
  EXPECT_FALSE(HostAllowed("corp.example", p));
  EXPECT_FALSE(HostAllowed("evilcorp.example", p));
  CrossSitePolicy any{"0.0.0.0", {"*"}, {}};
  EXPECT_TRUE(HostAllowed("anything.example", any));
  CrossSitePolicy named{"tracker.lab", {}, {}};
  EXPECT_TRUE(HostAllowed("Tracker.Lab:443", named));
}

TEST(CrossSiteTest, WritesComeFromTheServersOwnOrigin) {
  CrossSitePolicy p{"127.0.0.1", {}, {}};
  EXPECT_TRUE(OriginMayWrite("", "127.0.0.1:5000", p));
  EXPECT_TRUE(OriginMayWrite("http://127.0.0.1:5000", "127.0.0.1:5000", p));
  EXPECT_TRUE(OriginMayWrite("http://localhost", "localhost:80", p));
  EXPECT_TRUE(OriginMayWrite("https://localhost", "localhost", p));
  EXPECT_FALSE(OriginMayWrite("http://127.0.0.1:5001", "127.0.0.1:5000", p));
  EXPECT_FALSE(OriginMayWrite("http://localhost:5000", "127.0.0.1:5000", p));
  EXPECT_FALSE(OriginMayWrite("http://attacker.example", "127.0.0.1:5000", p));
  EXPECT_FALSE(OriginMayWrite("null", "127.0.0.1:5000", p));
  EXPECT_FALSE(OriginMayWrite("http://127.0.0.1:5000", "", p));
}

TEST(CrossSiteTest, CorsOriginsMayWriteAndRead) {
  CrossSitePolicy p{"127.0.0.1", {}, {"https://notebooks.lab"}};
  EXPECT_TRUE(OriginMayWrite("https://notebooks.lab", "127.0.0.1:5000", p));
  EXPECT_TRUE(CorsAllowed("https://notebooks.lab", p));
  EXPECT_FALSE(CorsAllowed("https://other.lab", p));
  EXPECT_FALSE(CorsAllowed("https://notebooks.lab", CrossSitePolicy{}));
}

}  // namespace
}  // namespace cairn::server
