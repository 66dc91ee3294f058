def statement(): pass
class PrivacyStatement: pass
